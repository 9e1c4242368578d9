// Corpus loading for training and evaluation (see dataset.h). Covered by tests/data/dataset_test.cpp.
#include "data/dataset.h"

#include "common/error.h"
#include "data/lm_stream.h"

namespace moe::data {

ParallelDataset load_parallel_dataset(const std::string& src_text, const std::string& tgt_text,
                                      const Vocab& src_vocab, const std::string& src_vocab_path,
                                      const Vocab& tgt_vocab, const std::string& tgt_vocab_path,
                                      const std::string& cache_dir, const ReadOptions& opts) {
  ParallelDataset d;
  d.src = load_or_build_cache(src_text, src_vocab, src_vocab_path, cache_dir, opts);
  d.tgt = load_or_build_cache(tgt_text, tgt_vocab, tgt_vocab_path, cache_dir, opts);
  MOE_CHECK(d.src.size() == d.tgt.size(), "corpus: parallel files are misaligned: '", src_text, "' has ",
            d.src.size(), " lines, '", tgt_text, "' has ", d.tgt.size());
  return d;
}

std::vector<int32_t> load_lm_stream(const std::string& text, const Vocab& vocab, const std::string& vocab_path,
                                    const std::string& cache_dir, const ReadOptions& opts) {
  return flatten_stream(load_or_build_cache(text, vocab, vocab_path, cache_dir, opts), vocab.eos_id());
}

}  // namespace moe::data
