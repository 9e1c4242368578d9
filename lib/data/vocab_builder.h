// Building vocabularies: SentencePiece BPE/unigram training through the linked trainer (ids
// pad=0 unk=1 bos=2 eos=3, so models stay ordinary SentencePiece models), and word vocabularies
// ("token count" lines, count-descending) with a count threshold and/or a size limit.
// Used by moe-vocab and by moe-train for missing vocabularies. Covered by tests/data/vocab_test.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moe::data {

struct SpmTrainOptions {
  std::vector<std::string> inputs;  // plain or .gz text files (joint vocabulary: both sides)
  std::string output;               // the model file (e.g. vocab.spm or x.model); a .vocab goes beside it
  int vocab_size = 8000;
  std::string model_type = "bpe";             // bpe | unigram
  std::string normalization = "nmt_nfkc";     // SentencePiece rule name (nmt_nfkc, identity, ...)
  double character_coverage = 1.0;
  int64_t input_sentence_size = 10'000'000;   // sentences sampled for training (0 = all)
  int threads = 2;
  uint32_t seed = 1;
};

/// Trains a SentencePiece model; throws moe::Error with SentencePiece's message on failure.
void train_sentencepiece(const SpmTrainOptions& opts);

struct WordVocabOptions {
  std::vector<std::string> inputs;
  std::string output;
  int64_t min_count = 1;  // words seen fewer times map to <unk>
  int64_t max_size = 0;   // 0 = no limit (reserved tokens not counted)
};

/// Counts whitespace-separated words and writes "token count" lines. Returns the number written.
int64_t build_word_vocab(const WordVocabOptions& opts);

/// Builds `path` from `inputs` when it does not exist yet (as Marian does for missing vocabularies):
/// .spm/.model paths get a SentencePiece model (spm options, inputs and output overridden), other
/// paths a word vocabulary (word options likewise). Returns true if it built one.
bool ensure_vocab(const std::string& path, const std::vector<std::string>& inputs, SpmTrainOptions spm = {},
                  WordVocabOptions word = {});

}  // namespace moe::data
