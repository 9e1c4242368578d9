// No repeated n-grams (fairseq's --no-repeat-ngram-size): a hypothesis y_1..y_L may not take a token that would
// make an n-gram it already holds, that is, with the last n-1 tokens k = y_{L-n+2..L},
//   banned(y) = { y_{i+n-1} : y_{i..i+n-2} = k, 1 <= i <= L-n+1 }   (n = 1: every token of y),
// and a banned token's log-probability is set to -inf before the search chooses (beam search and sampling
// alike). The tokens are the output's (a forced target prefix's included, <s> not). The rows of a forced
// prefix's steps are not blocked: the user's prefix is taken as given. Covered by
// tests/translator/repeated_ngrams_test.cpp and tests/gpu/beam_scores_parity_test.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace moe {

/// The tokens that would repeat an n-gram of `tokens` if appended (ascending, without duplicates); none when
/// n <= 0 or tokens hold fewer than n-1 tokens.
std::vector<int32_t> repeated_ngram_tokens(const std::vector<int32_t>& tokens, int64_t n);

/// Sets logp[r, t] = -inf for every banned token t of row r (logp [N, V] on any device, any floating dtype);
/// `rows[r]` is row r's tokens, or null for a row not to block.
void block_repeated_ngrams(Tensor& logp, const std::vector<const std::vector<int32_t>*>& rows, int64_t n);

}  // namespace moe
