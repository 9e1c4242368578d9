// safetensors files (the format PyTorch, NumPy and JAX users read with `safetensors`):
//   8-byte little-endian header length N, N bytes of JSON {"name": {"dtype": "F32", "shape": [..],
//   "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "string value"}}, then the raw data.
// Writes are atomic (common/atomic_file.h): a crash mid-write leaves any previous file intact. Covered by
// tests/unit/safetensors_test.cpp.
#pragma once
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

/// Reads a file written by us or by the Python `safetensors` package; errors name the path and what is wrong.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace moe
