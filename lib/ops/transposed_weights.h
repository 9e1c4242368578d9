// f32 inference weights kept transposed: a [K, N] weight W held as Wt [N, K], the layout CTranslate2 keeps,
// because oneDNN's AVX2 sgemm multiplies by a transposed b 1.2-1.5x faster for the 16-256 rows of decoding's
// products and as fast elsewhere (docs/PERF.md, "The default batch of beam search"): op(W) = Wt^T, so a product
// with W untransposed becomes one with Wt transposed and vice versa, the same sums in the same order per element
// (byte-identical translations there). A model's set is made once when an f32 model loads for CPU inference
// (models/int8_model.h: InferenceWeights, which also releases the originals); while a set is active
// (ActiveTransposedWeights) the CPU matmul and linear of an f32 weight it holds (same data pointer and shape) read
// its copy, and so does a slice of it (the LSTM's weights). Covered by tests/ops/transposed_weights_test.cpp.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "ops/active_weights.h"
#include "tensor/tensor.h"

namespace moe {

/// A model's transposed f32 weights, by the 2-D weight tensors they stand for.
class TransposedWeights {
 public:
  /// Adds the transposed copy of the 2-D f32 CPU weight `w`.
  void add(const Tensor& w);
  /// The transposed copy of `w` (same data pointer and shape), or nullptr.
  const Tensor* find(const Tensor& w) const;
  size_t size() const { return by_data_.size(); }
  size_t bytes() const;

 private:
  struct Entry {
    Shape shape;  // the original's [K, N]
    Tensor t;     // [N, K]
  };
  std::map<const void*, Entry> by_data_;
};

/// While alive, the CPU GEMMs and slices read `weights` (ops/active_weights.h).
using ActiveTransposedWeights = ActiveWeights<TransposedWeights>;
/// The transposed copy of `w` in an active set, or nullptr.
inline const Tensor* active_transposed_weight(const Tensor& w) { return ActiveTransposedWeights::find(w); }

/// Part of W read from its transposed copy `wt` [N, K], as a strided copy reads W: out[o * len + i] = W's value at
/// flat index o * full + off + i, for o < outer, i < len.
void copy_strided_from_transposed(const Tensor& wt, float* out, int64_t outer, int64_t len, int64_t full, int64_t off);

}  // namespace moe
