// int8 inference GEMMs on the CPU: weights quantized once per output channel (symmetric, f32 scales),
// activations per row on the fly, products accumulated exactly in int32 (ops/cpu_gemm.h: oneDNN's
// gemm_s8s8s32 with AVX-512 VNNI, moe's AVX2 kernel over weights packed once, or a portable loop), then scaled back:
//   s_w[j] = max_k |w_kj| / 63,   q_kj = round(w_kj / s_w[j])      (per column j of a [K, N] weight)
//   s_a[i] = max_k |a_ik| / 127,  p_ik = round(a_ik / s_a[i])      (per row i of the activations)
//   y_ij = s_a[i] s_w[j] sum_k p_ik q_kj
// Weights take 7 bits of magnitude (kInt8WeightMax) on every CPU, so that AVX2's kernel multiplies unsigned
// activation bytes by them with vpmaddubsw without its 16-bit pair sums saturating (exact, 1.3-1.5x the int16
// kernel it replaced); measured on the Multi30k models, BLEU moved by at most 0.15 against 8-bit weights
// (docs/PERF.md), and translations stay the same on every CPU.
// Error: with a'_ik = s_a p_ik and w'_kj = s_w q_kj, |a - a'| <= s_a / 2 and |w - w'| <= s_w / 2, so
//   |y_ij - sum_k a_ik w_kj| <= sum_k (|a_ik| s_w[j] / 2 + |w'_kj| s_a[i] / 2)     (int8_error_bound)
// plus f32 rounding. A weight used transposed (the output layer, [N, K] = the embedding table) has its
// scales per row. The model's quantized weights form an Int8Weights set; while one is active
// (ActiveInt8Weights), the CPU matmul / linear / grouped GEMM of an f32 weight it holds (same data and
// shape, used with its output channels as columns of the product) take this path instead of f32.
// Covered by tests/ops/int8_gemm_test.cpp.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "ops/active_weights.h"
#include "tensor/tensor.h"

namespace moe {

/// The largest quantized weight magnitude (see above; pre-quantized checkpoints with more are requantized on load).
constexpr int kInt8WeightMax = 63;

struct Int8Matrix {
  Shape shape;               // the f32 weight's: [K, N] or [E, K, N] (scales per column), [N, K] when per_row
  bool per_row = false;      // scales along axis 0 (a 2-D weight used transposed)
  std::vector<int8_t> q;     // the f32 weight's layout, in [-kInt8WeightMax, kInt8WeightMax] for quantize_int8's
  std::vector<float> scale;  // [N] or [E, N]
  std::vector<int8_t> panels;  // q per expert in the AVX2 kernel's order (cpu::pack_s8_panels), where it runs
  int64_t experts() const { return shape.ndim() == 3 ? shape[0] : 1; }
  int64_t k() const { return per_row ? shape[1] : shape[-2]; }
  int64_t n() const { return per_row ? shape[0] : shape[-1]; }
};

/// Quantizes an f32 CPU weight ([K, N], [E, K, N], or [N, K] with per_row) per output channel.
Int8Matrix quantize_int8(const Tensor& weight, bool per_row);
/// The f32 values q * scale (what a pre-quantized checkpoint puts into the parameter store).
Tensor dequantize_int8(const Int8Matrix& m);
/// Part of them, as a strided copy reads it: out[o * len + i] = value at flat index o * full + off + i,
/// for o < outer, i < len (a slice of a weight whose f32 values int8 inference released or replaces).
void dequantize_int8_strided(const Int8Matrix& m, float* out, int64_t outer, int64_t len, int64_t full, int64_t off);

/// Fills m.panels where the CPU's int8 product runs the AVX2 panel kernel (cpu::s8_panels_run(), and q within its
/// range), else clears it; without them gemm_s8s8s32 packs what int8_matmul multiplies at each call.
void pack_int8_panels(Int8Matrix& m);

/// A model's quantized weights, by the f32 weight tensors they replace (each packed by pack_int8_panels).
class Int8Weights {
 public:
  void add(const Tensor& f32_weight, Int8Matrix m);
  /// The quantized form of `w` (same data pointer and shape), or nullptr.
  const Int8Matrix* find(const Tensor& w) const;
  size_t size() const { return by_data_.size(); }
  size_t bytes() const;

 private:
  std::map<const void*, Int8Matrix> by_data_;
};

/// While alive, the CPU GEMMs use `weights` (ops/active_weights.h).
using ActiveInt8Weights = ActiveWeights<Int8Weights>;
/// The quantized form of `w` in an active set, or nullptr.
inline const Int8Matrix* active_int8_weight(const Tensor& w) { return ActiveInt8Weights::find(w); }

namespace cpu {
/// out[m, N] = (accumulate ? out : 0) + x[m, K] @ W, W = expert `e` of `w` (its transposed table when
/// per_row), by the int8 path above; rows or columns split over the CPU threads.
void int8_matmul(const float* x, int64_t m, const Int8Matrix& w, int64_t e, float* out, bool accumulate);
}  // namespace cpu

/// The bound above for row i of x [m, K] and column j of the product (expert e), for tests.
double int8_error_bound(const float* x_row, int64_t k, const Int8Matrix& w, int64_t e, int64_t j);

}  // namespace moe
