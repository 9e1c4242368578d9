// Helpers for the data tests: a fresh temporary folder per test, small file writers and corpora of given lengths.
// Used by every tests/data/*_test.cpp.
#pragma once
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "data/token_cache.h"
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

/// Pairs of the given source and target token counts (the ids are 4 and 5: irrelevant to the tests using it).
inline std::pair<data::EncodedCorpus, data::EncodedCorpus> corpora(const std::vector<std::pair<int, int>>& lengths) {
  std::vector<int32_t> s, t;
  std::vector<int64_t> so{0}, to{0};
  for (const auto& [ls, lt] : lengths) {
    s.insert(s.end(), static_cast<size_t>(ls), 4);
    t.insert(t.end(), static_cast<size_t>(lt), 5);
    so.push_back(static_cast<int64_t>(s.size()));
    to.push_back(static_cast<int64_t>(t.size()));
  }
  return {data::EncodedCorpus(s, so), data::EncodedCorpus(t, to)};
}

inline std::string shared(const std::string& rel) { return std::string(MOE_SHARED_DATA) + "/" + rel; }
inline bool have_shared(const std::string& rel) { return std::filesystem::exists(shared(rel)); }

}  // namespace moe::test
