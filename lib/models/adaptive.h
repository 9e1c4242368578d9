// Adaptive input (Baevski & Auli 2019) and adaptive softmax (Grave et al. 2017, fairseq's layout).
// The vocabulary (sorted by frequency) is cut into bands [0, c1), [c1, c2), ..., [c_n, V); band i
// has an embedding table E_i [size_i, d_i] with d_i = d / factor^i and a projection P_i [d_i, d].
//   input:  x = scale * E_band(w)[w - lo] P_band(w)
//   output: head over the c1 frequent words + one token per tail band, logits = h [E_0 | C]^T
//           (E_0 tied or a separate matrix); tail i: logits = dropout(h P_i^T) E_i^T (tied P_i, E_i
//           or separate ones); log p(w) = log p_head(band token) + log p_tail(w - lo).
// The loss runs each tail only over the targets in its band (index_select), never over all V.
// Covered by tests/models/adaptive_test.cpp.
#pragma once
#include <string>
#include <vector>

#include "layers/builder.h"

namespace moe {

struct AdaptiveSpec {
  int64_t vocab = 0, dim = 0;
  std::vector<int64_t> cutoffs;  // increasing, inside (0, vocab); empty = one band
  double factor = 4;
  int64_t bands() const { return static_cast<int64_t>(cutoffs.size()) + 1; }
  int64_t band_begin(int64_t i) const { return i == 0 ? 0 : cutoffs[static_cast<size_t>(i - 1)]; }
  int64_t band_end(int64_t i) const { return i + 1 == bands() ? vocab : cutoffs[static_cast<size_t>(i)]; }
  int64_t band_dim(int64_t i) const;
  /// Checks the sizes and cutoffs; `what` names the option in messages.
  void validate(const std::string& what) const;
};

/// Embeddings [ids.shape..., dim] (in the graph's compute dtype) for i32 ids (any device; they are
/// read on the host to split them by band). Parameters: b.name("emb{i}") [size_i, d_i] ~ N(0, d_i^-1/2)
/// and b.name("proj{i}") [d_i, dim] Glorot-uniform.
Expr adaptive_input(const Builder& b, const AdaptiveSpec& spec, const Tensor& ids, float scale = 1.f);
/// The same from explicit tables emb[i] [size_i, d_i] and projections proj[i] [d_i, dim] (the output
/// takes proj's dtype).
Expr adaptive_input(const std::vector<Expr>& emb, const std::vector<Expr>& proj, const AdaptiveSpec& spec,
                    const Tensor& ids, float scale = 1.f);

/// The output side's weights, in "rows are outputs" layout (logits = x W^T).
struct AdaptiveSoftmaxWeights {
  Expr head;                    // [c1 + bands - 1, dim]
  std::vector<Expr> tail_proj;  // per tail band: [d_i, dim]
  std::vector<Expr> tail_out;   // per tail band: [size_i, d_i]
};

struct AdaptiveSoftmaxOptions {
  bool tie_weights = false;  // E_i of the adaptive input (its builder `input`) as output matrices
  bool tie_proj = false;     // P_i of the adaptive input as tail projections
};

/// Declares (or ties) the weights: b.name("head"), b.name("tail{i}.proj"), b.name("tail{i}.out");
/// tied ones come from `input` (the adaptive input's builder).
AdaptiveSoftmaxWeights adaptive_softmax_weights(const Builder& b, const Builder& input, const AdaptiveSpec& spec,
                                                const AdaptiveSoftmaxOptions& opt);

/// Summed cross-entropy (f32 scalar; f64 for f64 h) of h [N, dim] against targets [N] (i32, read on the
/// host) over the rows with mask != 0 (mask [N], any dtype, or undefined = all rows), each row's times its mask
/// value where the mask holds others than 0 and 1 (data weighting's weights).
/// Label smoothing applies within the head and within each tail softmax; `dropout` acts on the
/// tail projections (training graphs only).
Expr adaptive_softmax_loss(const AdaptiveSoftmaxWeights& w, const AdaptiveSpec& spec, const Expr& h,
                           const Tensor& targets, const Tensor& mask, float label_smoothing = 0.f, float dropout = 0.f);

/// Full log-probabilities [N, vocab] (f32; f64 for f64 h), for scoring and sampling.
Expr adaptive_log_probs(const AdaptiveSoftmaxWeights& w, const AdaptiveSpec& spec, const Expr& h);

}  // namespace moe
