// Fuzzes the safetensors reader (lib/common/safetensors.cpp: 8-byte header length, JSON header with
// dtypes, shapes and data offsets, raw data) that loads every checkpoint. Invariants: a bad file is a
// moe::Error naming the file; an accepted file's tensors lie inside it (ASan checks the reads), and
// writing them back and reading that copy gives the same names, dtypes, shapes, bytes and metadata.
// Seeds: tests/fuzz/seeds/safetensors.
#include "tensor/safetensors.h"

#include <cstring>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = moe::fuzz::write_file("in.safetensors", {reinterpret_cast<const char*>(data), size});
  moe::SafetensorsFile file;
  if (!moe::fuzz::accepts([&] { file = moe::load_safetensors(path); }, path)) return 0;
  const std::string copy = moe::fuzz::scratch_dir() + "/copy.safetensors";
  moe::save_safetensors(copy, file.tensors, file.metadata);
  const moe::SafetensorsFile back = moe::load_safetensors(copy);
  FUZZ_REQUIRE(back.tensors.size() == file.tensors.size() && back.metadata == file.metadata, "the copy differs");
  for (size_t i = 0; i < back.tensors.size(); ++i) {
    const auto& [name, t] = file.tensors[i];
    const auto& [name2, t2] = back.tensors[i];
    FUZZ_REQUIRE(name == name2 && t.dtype() == t2.dtype() && t.shape() == t2.shape() && t.bytes() == t2.bytes() &&
                     std::memcmp(t.raw(), t2.raw(), t.bytes()) == 0,
                 "tensor '" + name + "' differs in the copy");
  }
  return 0;
}
