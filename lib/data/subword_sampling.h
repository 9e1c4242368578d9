// Subword regularisation (Kudo 2018, "Subword Regularization"; Provilkov et al. 2020, "BPE-Dropout"): each epoch
// of moe-train sees every training sentence in a segmentation drawn anew from its SentencePiece vocabulary instead
// of the one best (data.train.subword_alpha, data.train.subword_nbest; Marian's --sentencepiece-alphas,
// OpenNMT's subword_alpha / subword_nbest). A unigram model samples among its nbest best segmentations (-1: all,
// by forward-filtering and backward-sampling) with probabilities P(x)^alpha; a BPE model skips each merge with
// probability alpha. sample_encode() is deterministic in its seed: it encodes on a fresh thread whose SentencePiece
// generator is seeded with it, so that an epoch (seeded by the run's seed and its number) is the same after a
// resume. Validation, BLEU and inference keep the one best segmentation. Covered by
// tests/data/subword_sampling_test.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/token_cache.h"
#include "data/vocab.h"

namespace moe::data {

struct SubwordSampling {
  double alpha = 0;  // 0: off (the one best segmentation)
  int nbest = -1;    // unigram: sample among the nbest best segmentations (-1: all); BPE: not read
  bool enabled() const { return alpha > 0; }
};

/// `lines` encoded by `vocab` (a SentencePiece vocabulary, else an error) with a segmentation sampled per line, the
/// same for the same seed.
EncodedCorpus sample_encode(const std::vector<std::string>& lines, const Vocab& vocab, const SubwordSampling& s,
                            uint64_t seed);

}  // namespace moe::data
