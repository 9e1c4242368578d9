// safetensors.h implementation. The JSON header is parsed with yaml-cpp (JSON is a subset of YAML);
// every field is checked (kinds, dtypes, non-negative shapes no larger than the file, offsets inside
// it), so a damaged file is a moe::Error naming it. Covered by tests/unit/safetensors_test.cpp and
// tests/fuzz/safetensors.cpp.
#include "tensor/safetensors.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/atomic_file.h"
#include "common/json.h"

namespace moe {

namespace {
const char* st_dtype(DType t) {
  switch (t) {
    case DType::f32:
      return "F32";
    case DType::f64:
      return "F64";
    case DType::bf16:
      return "BF16";
    case DType::f16:
      return "F16";
    case DType::i32:
      return "I32";
    case DType::i64:
      return "I64";
    case DType::u8:
      return "U8";
  }
  return "?";
}

DType parse_st_dtype(const std::string& s, const std::string& path, const std::string& name) {
  for (DType t : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8})
    if (s == st_dtype(t)) return t;
  MOE_FAIL(path, ": tensor '", name, "' has dtype ", s, ", which moe does not support");
}

}  // namespace

const Tensor& SafetensorsFile::get(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  MOE_FAIL("checkpoint has no tensor named '", name, "'");
}

bool SafetensorsFile::has(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return true;
  return false;
}

namespace {
/// The longest header key (tensor name or metadata key) read and written, JSON-escaped: yaml-cpp, which parses the
/// header, refuses a flow mapping's keys past 1,024 characters of JSON text. Every key checked against it on both
/// sides, a file we read we can write back, and one we write we can read.
constexpr size_t kMaxKeyChars = 1000;

void check_key(const std::string& path, const char* what, const std::string& key) {
  const size_t n = json_escape(key).size();
  MOE_CHECK(n <= kMaxKeyChars, path, ": a ", what, " of ", n, " characters as JSON (", key.substr(0, 40),
            "...); at most ", kMaxKeyChars, " are read");
}
}  // namespace

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  for (const auto& [k, v] : metadata) check_key(path, "metadata key", k);
  for (const auto& [name, t] : tensors) check_key(path, "tensor name", name);
  JsonObject header;
  if (!metadata.empty()) {
    JsonObject meta;
    for (const auto& [k, v] : metadata) meta.add(k, v);
    header.add_raw("__metadata__", meta.str());
  }
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    JsonObject entry;
    std::vector<int64_t> shape = t.shape().vec();
    entry.add("dtype", st_dtype(t.dtype())).add("shape", shape);
    entry.add("data_offsets",
              std::vector<int64_t>{static_cast<int64_t>(offset), static_cast<int64_t>(offset + t.bytes())});
    header.add_raw(name, entry.str());
    offset += t.bytes();
  }
  std::string json = header.str();
  while ((json.size() + 8) % 8) json += ' ';  // align the data section to 8 bytes, as the reference writer does
  write_file_atomic(path, [&](AtomicFileWriter& out) {
    uint64_t n = json.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(len, 8);
    out.write(json.data(), json.size());
    for (const auto& [name, t] : tensors) {
      const Tensor host = t.device().is_cpu() ? t : t.to(Device::cpu());
      out.write(host.raw(), host.bytes());
    }
  });
}

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
  MOE_CHECK(in_.good(), "cannot open checkpoint ", path, ": ", std::strerror(errno));
  in_.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in_.tellg());
  in_.seekg(0);
  unsigned char len[8];
  MOE_CHECK(file_size >= 8 && in_.read(reinterpret_cast<char*>(len), 8), path, ": not a safetensors file (too short)");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(len[i]) << (8 * i);
  MOE_CHECK(n <= file_size - 8, path, ": not a safetensors file (header length ", n, " exceeds the file size)");
  std::string json(n, '\0');
  in_.read(json.data(), static_cast<std::streamsize>(n));
  YAML::Node header;
  try {
    header = YAML::Load(json);
  } catch (const YAML::Exception& e) {
    MOE_FAIL(path, ": corrupt safetensors header: ", e.what());
  }
  MOE_CHECK(header.IsMap(), path, ": corrupt safetensors header (not a JSON object)");
  data_start_ = 8 + n;
  struct Entry {
    uint64_t begin, end;
    std::string name;
    DType dtype;
    std::vector<int64_t> dims;
  };
  std::vector<Entry> entries;
  try {  // a missing field or a value of the wrong kind throws from yaml-cpp
    for (const auto& kv : header) {
      const std::string name = kv.first.as<std::string>();
      const YAML::Node& e = kv.second;
      if (name == "__metadata__") {
        for (const auto& m : e) {
          const std::string key = m.first.as<std::string>();
          check_key(path, "metadata key", key);  // yaml-cpp also takes raw control characters, which JSON escapes
          metadata_[key] = m.second.as<std::string>();
        }
        continue;
      }
      check_key(path, "tensor name", name);
      const YAML::Node offsets = e["data_offsets"];
      MOE_CHECK(offsets.IsSequence() && offsets.size() == 2, path, ": tensor '", name,
                "' needs \"data_offsets\": [begin, end]");
      entries.push_back({offsets[0].as<uint64_t>(), offsets[1].as<uint64_t>(), name,
                         parse_st_dtype(e["dtype"].as<std::string>(), path, name),
                         e["shape"].as<std::vector<int64_t>>()});
    }
  } catch (const YAML::Exception& e) {
    MOE_FAIL(path, ": corrupt safetensors header: ", e.what());
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (const Entry& e : entries) {
    // The product of the non-zero dimensions is bounded by the file's size, so that no product overflows.
    uint64_t span = dtype_size(e.dtype);
    bool empty = false;
    for (int64_t d : e.dims) {
      MOE_CHECK(d >= 0, path, ": tensor '", e.name, "' has a negative dimension ", d);
      if (d == 0) {
        empty = true;
        continue;
      }
      MOE_CHECK(span <= file_size / static_cast<uint64_t>(d), path, ": tensor '", e.name,
                "' has a shape larger than the file");
      span *= static_cast<uint64_t>(d);
    }
    const uint64_t bytes = empty ? 0 : span;
    const Shape shape(e.dims);
    MOE_CHECK(e.end >= e.begin && e.end - e.begin == bytes && data_start_ + e.end <= file_size, path, ": tensor '",
              e.name, "' has inconsistent offsets [", e.begin, ", ", e.end, ") for shape ", shape,
              " (file truncated?)");
    entries_.push_back({e.name, e.dtype, shape, e.begin, bytes});
  }
}

const SafetensorsEntry* SafetensorsReader::find(const std::string& name) const {
  for (const SafetensorsEntry& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

void SafetensorsReader::read(const SafetensorsEntry& e, const Tensor& dst) {
  MOE_CHECK(dst.device().is_cpu() && dst.dtype() == e.dtype && dst.shape() == e.shape, path_,
            ": tensor '", e.name, "' (", dtype_name(e.dtype), " ", e.shape, ") read into a ", dtype_name(dst.dtype()),
            " ", dst.shape(), " tensor");
  in_.seekg(static_cast<std::streamoff>(data_start_ + e.offset));
  in_.read(static_cast<char*>(dst.raw()), static_cast<std::streamsize>(e.bytes));
  MOE_CHECK(in_.good(), path_, ": could not read tensor '", e.name, "'");
}

Tensor SafetensorsReader::read(const SafetensorsEntry& e) {
  Tensor t = Tensor::empty(e.shape, e.dtype, Device::cpu());
  read(e, t);
  return t;
}

SafetensorsFile load_safetensors(const std::string& path) {
  SafetensorsReader reader(path);
  SafetensorsFile file;
  file.metadata = reader.metadata();
  for (const SafetensorsEntry& e : reader.entries()) file.tensors.emplace_back(e.name, reader.read(e));
  return file;
}

}  // namespace moe
