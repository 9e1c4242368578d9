// subword_sampling.h implementation. SentencePiece draws from a thread-local std::mt19937 that a thread seeds, on
// its first draw, from the library's global seed (SetRandomGeneratorSeed): a fresh thread started after setting it
// draws the same sequence every time. Covered by tests/data/subword_sampling_test.cpp.
#include "data/subword_sampling.h"

#include <sentencepiece_processor.h>

#include <exception>
#include <mutex>
#include <thread>

#include "common/error.h"

namespace moe::data {

EncodedCorpus sample_encode(const std::vector<std::string>& lines, const Vocab& vocab, const SubwordSampling& s,
                            uint64_t seed) {
  const auto* spm = dynamic_cast<const SentencePieceVocab*>(&vocab);
  MOE_CHECK(spm, "subword sampling needs a SentencePiece vocabulary (.spm / .model), not a word list");
  static std::mutex global_seed;  // the library's seed is one global: one sampling pass at a time
  const std::lock_guard<std::mutex> lock(global_seed);
  sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned>(seed ^ (seed >> 32)));
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets{0};
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      offsets.reserve(lines.size() + 1);
      for (const std::string& line : lines) {
        const std::vector<int32_t> e = spm->sample_encode(line, s.nbest, static_cast<float>(s.alpha));
        ids.insert(ids.end(), e.begin(), e.end());
        offsets.push_back(static_cast<int64_t>(ids.size()));
      }
    } catch (...) {
      error = std::current_exception();
    }
  });
  worker.join();
  if (error) std::rethrow_exception(error);
  return EncodedCorpus(std::move(ids), std::move(offsets));
}

}  // namespace moe::data
