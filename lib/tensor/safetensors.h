// safetensors files (the format PyTorch, NumPy and JAX users read with `safetensors`):
//   8-byte little-endian header length N, N bytes of JSON {"name": {"dtype": "F32", "shape": [..],
//   "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "string value"}}, then the raw data.
// Writes are atomic (common/atomic_file.h): a crash mid-write leaves any previous file intact. Tensor names and
// metadata keys are at most 1,000 characters as JSON, on reading and on writing (yaml-cpp, which parses the
// header, reads no longer keys). Covered by tests/unit/safetensors_test.cpp and tests/fuzz/safetensors.cpp.
#pragma once
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "tensor/tensor.h"

namespace moe {

struct SafetensorsFile {
  std::vector<std::pair<std::string, Tensor>> tensors;  // in file order (CPU tensors when loaded)
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`, or an error naming the file's path and the missing name.
  const Tensor& get(const std::string& name) const;
  bool has(const std::string& name) const;
};

/// Writes atomically (temp file + fsync + rename). Tensors may live on any device.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// One tensor of a file's header: where its bytes lie (from the start of the data).
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t offset = 0, bytes = 0;
};

/// A file written by us or by the Python `safetensors` package, opened for reading tensor by tensor: the
/// header is read and checked at once (errors name the path and what is wrong), each tensor when asked, so
/// that a caller can put it where it belongs without holding the whole file in memory.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path);
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }  // in file order
  /// The entry called `name`, or nullptr.
  const SafetensorsEntry* find(const std::string& name) const;
  /// Reads the entry's bytes into `dst`: a CPU tensor of its dtype and shape (a view of a larger one too).
  void read(const SafetensorsEntry& e, const Tensor& dst);
  /// The entry as a new CPU tensor.
  Tensor read(const SafetensorsEntry& e);

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsEntry> entries_;
};

/// The whole file in memory (SafetensorsReader's tensors, in file order).
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace moe
