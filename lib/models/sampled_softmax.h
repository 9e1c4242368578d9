// Sampled softmax by importance sampling (Jean et al. 2015, as Jozefowicz et al. 2016 and Shazeer et
// al. 2017 trained their 1B-word softmax): per batch, k words s_1..s_k drawn with replacement from the
// log-uniform (Zipf) proposal over ids sorted by frequency,
//   Q(w) = log((w + 2) / (w + 1)) / log(V + 1),
// shared by every row. Row i with target t and output scores z_w = h_i . W_w has
//   Z^_i = exp(z_t) + sum_j [s_j != t] exp(z_{s_j}) / (k Q(s_j)),   loss_i = log Z^_i - z_t,
// i.e. a softmax over the target and the samples, each sample's score corrected by -log(k Q(s_j))
// and "accidental hits" (s_j = t) removed. Since E[sum_j [s_j != t] exp(z_{s_j}) / (k Q(s_j))] =
// sum_{w != t} exp(z_w), E[Z^_i] = Z_i: exp(loss_i) is an unbiased estimate of exp(full loss_i) (the
// full softmax's perplexity term), and loss_i itself converges to the full loss as k grows (by
// Jensen, from below). Training only: validation and perplexity use the full softmax.
// Covered by tests/models/sampled_softmax_test.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "layers/builder.h"

namespace moe {

/// Q(w) of the log-uniform proposal over `vocab` ids.
double log_uniform_probability(int64_t w, int64_t vocab);

/// k ids drawn with replacement from Q, keyed by (seed, stream) (Philox: the same on every device).
std::vector<int32_t> draw_log_uniform(int64_t vocab, int64_t k, uint64_t seed, uint64_t stream);

/// Per-row sampled losses [N] (f32; f64 for f64 rows) of rows [N, d] against the output matrix weight [V, d] and
/// targets [N] (i32), with the given samples (see the file comment).
Expr sampled_softmax_loss(const Builder& b, const Expr& rows, const Expr& weight, const Tensor& targets,
                          const std::vector<int32_t>& samples);

}  // namespace moe
