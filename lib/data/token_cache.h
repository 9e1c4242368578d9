// Encoded corpora: token ids of every line (no <s>/</s>) plus line offsets, held in memory or mapped
// from a binary cache file beside the text (or in a cache folder when the text's folder is read-only).
// Cache file: header {magic "MOETOK02", text size, text mtime (ns), vocabulary hash (FNV-1a of the
// vocabulary file), read flags (skip invalid UTF-8), line count, token count}, int64 offsets[lines+1],
// int32 ids[tokens]; it is rebuilt when the text, the vocabulary or the read options change. Covered by tests/data/token_cache_test.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/corpus.h"

namespace moe::data {

class Vocab;

class EncodedCorpus {
 public:
  EncodedCorpus() = default;
  /// From in-memory arrays (offsets has size()+1 entries, offsets[0] == 0).
  EncodedCorpus(std::vector<int32_t> ids, std::vector<int64_t> offsets);
  /// Encodes lines with a vocabulary.
  static EncodedCorpus encode(const std::vector<std::string>& lines, const Vocab& vocab);

  int64_t size() const { return lines_; }
  int64_t tokens() const { return lines_ ? offsets_[lines_] : 0; }
  std::span<const int32_t> sentence(int64_t i) const {
    return {ids_ + offsets_[i], static_cast<size_t>(offsets_[i + 1] - offsets_[i])};
  }
  int64_t length(int64_t i) const { return offsets_[i + 1] - offsets_[i]; }
  bool mapped() const { return mapped_; }

 private:
  friend EncodedCorpus load_or_build_cache(const std::string&, const Vocab&, const std::string&,
                                           const std::string&, const ReadOptions&, bool*);
  std::shared_ptr<void> owner_;  // the vectors or the mapping
  const int32_t* ids_ = nullptr;
  const int64_t* offsets_ = nullptr;
  int64_t lines_ = 0;
  bool mapped_ = false;
};

/// Path of the cache for a text file: "<text>.<vocab file name>.ids" (or inside cache_dir).
std::string cache_path(const std::string& text_path, const std::string& vocab_path, const std::string& cache_dir = "");

/// Maps the cache if its key matches, else encodes the text and (best effort) writes the cache.
/// `rebuilt`, when given, tells which happened.
EncodedCorpus load_or_build_cache(const std::string& text_path, const Vocab& vocab, const std::string& vocab_path,
                                  const std::string& cache_dir = "", const ReadOptions& opts = {},
                                  bool* rebuilt = nullptr);

}  // namespace moe::data
