// Helpers for the data tests: a fresh temporary folder per test and small file writers.
// Used by every tests/data/*_test.cpp.
#pragma once
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/temp_dirs.h"

namespace moe::test {

inline std::string temp_dir(const std::string& name) {
  static std::atomic<int> counter{0};
  return fresh_temp_dir("moe_data_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++))
      .string();
}

inline std::string write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

inline std::string write_gz(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return path;
}

inline std::string shared(const std::string& rel) { return std::string(MOE_SHARED_DATA) + "/" + rel; }
inline bool have_shared(const std::string& rel) { return std::filesystem::exists(shared(rel)); }

}  // namespace moe::test
