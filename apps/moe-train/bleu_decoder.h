// The decoder of moe-train's BLEU validation (training/bleu_validation.h): lib/translator's batched
// beam search with the valid.* search settings (the shared decoding options, models/decoding_options.h:
// beam, lenpen, length_penalty, max_len_a/b, min_len, no_repeat_ngram_size, unkpen) and valid.max_tokens per
// batch. Sources longer than the model's positions allow are cut (the reference still counts in full).
// Covered by tests/training/bleu_validation_test.cpp.
#pragma once
#include "training/bleu_validation.h"
#include "training/train_options.h"

namespace moe {

BleuDecoder translator_bleu_decoder(const ValidOptions& valid);

}  // namespace moe
