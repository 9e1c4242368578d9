// The trainer's entry point to a corpus: text files + vocabularies -> encoded corpora through the
// token cache, with the alignment check for parallel data (errors name both files and counts).
// Monolingual LM data becomes one token stream with </s> after every line.
// Covered by tests/data/dataset_test.cpp.
#pragma once
#include <string>
#include <vector>

#include "data/corpus.h"
#include "data/token_cache.h"
#include "data/vocab.h"

namespace moe::data {

struct ParallelDataset {
  EncodedCorpus src, tgt;
};

/// Encodes (or maps the caches of) two line-aligned files; cache_dir "" = beside the texts.
ParallelDataset load_parallel_dataset(const std::string& src_text, const std::string& tgt_text,
                                      const Vocab& src_vocab, const std::string& src_vocab_path,
                                      const Vocab& tgt_vocab, const std::string& tgt_vocab_path,
                                      const std::string& cache_dir = "", const ReadOptions& opts = {});

/// A monolingual file as one LM token stream (each line's ids, then </s>).
std::vector<int32_t> load_lm_stream(const std::string& text, const Vocab& vocab, const std::string& vocab_path,
                                    const std::string& cache_dir = "", const ReadOptions& opts = {});

}  // namespace moe::data
