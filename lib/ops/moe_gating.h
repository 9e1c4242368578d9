// Kernels of sparsely-gated MoE routing (Shazeer et al. 2017; docs/MODELS.md §3.2-3.4, §3.10):
//   gate_noise:     H = clean + eps * sigma, eps_i = philox_normal(seed, stream, i) (same on CPU/GPU);
//                   backward dclean += dH, dsigma += dH * eps (eps recomputed, not stored).
//   prob_in_top_k:  P[r,i] = Phi((clean - tau) / sigma), top = the k+1 largest noisy values of row r,
//                   tau = top[k] if noisy[r,i] > top[k] (i is in the top k) else top[k-1];
//                   backward: dclean += dP phi/sigma, dsigma -= dP phi z/sigma, dtop[tau] -= dP phi/sigma.
//   route_index:    out[r, j] = (outer[r] / divisor) * inner_size + inner[r, j] (i32; inner optional;
//                   outer undefined means outer[r] = r, rows = out.shape()[0]).
//   threshold_mask: mask[r, j] = x[r, j] > thresholds[e] ? 1 : 0, e = experts[r, j] (or j if undefined).
// CPU reference in lib/ops/moe_gating.cpp, CUDA in cuda/ops/moe_gating.cu. Covered by
// tests/ops/moe_gating_test.cpp and tests/gpu/moe_gating_parity_test.cpp.
#pragma once
#include <cstdint>

#include "tensor/philox.h"
#include "tensor/tensor.h"

namespace moe {

/// The standard-normal gate noise of element i (shared by the CPU and CUDA kernels).
MOE_HD float gate_noise_value(uint64_t seed, uint64_t stream, uint64_t i) { return philox_normal(seed, stream, i); }

namespace cpu {
void gate_noise_forward(const Tensor& clean, const Tensor& sigma, Tensor& noisy, uint64_t seed, uint64_t stream);
void gate_noise_backward(const Tensor& sigma, const Tensor& dnoisy, Tensor* dclean, Tensor* dsigma, uint64_t seed,
                         uint64_t stream);
void prob_in_top_k_forward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                           Tensor& prob);
void prob_in_top_k_backward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                            const Tensor& dprob, Tensor* dclean, Tensor* dsigma, Tensor* dtop);
void route_index(const Tensor& outer, const Tensor& inner, int64_t divisor, int64_t inner_size, Tensor& out);
void threshold_mask(const Tensor& x, const Tensor& experts, const Tensor& thresholds, Tensor& mask);
}  // namespace cpu
namespace cuda {
void gate_noise_forward(const Tensor& clean, const Tensor& sigma, Tensor& noisy, uint64_t seed, uint64_t stream);
void gate_noise_backward(const Tensor& sigma, const Tensor& dnoisy, Tensor* dclean, Tensor* dsigma, uint64_t seed,
                         uint64_t stream);
void prob_in_top_k_forward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                           Tensor& prob);
void prob_in_top_k_backward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                            const Tensor& dprob, Tensor* dclean, Tensor* dsigma, Tensor* dtop);
void route_index(const Tensor& outer, const Tensor& inner, int64_t divisor, int64_t inner_size, Tensor& out);
void threshold_mask(const Tensor& x, const Tensor& experts, const Tensor& thresholds, Tensor& mask);
}  // namespace cuda

/// noisy = clean + eps * sigma (clean, sigma, noisy: same shape and floating dtype).
void gate_noise_forward(const Tensor& clean, const Tensor& sigma, Tensor& noisy, uint64_t seed, uint64_t stream);
/// dclean += dnoisy, dsigma += dnoisy * eps; either may be nullptr.
void gate_noise_backward(const Tensor& sigma, const Tensor& dnoisy, Tensor* dclean, Tensor* dsigma, uint64_t seed,
                         uint64_t stream);
/// clean, noisy, sigma, prob [R, n]; top [R, k+1] (descending noisy values), 1 <= k < n.
void prob_in_top_k_forward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                           Tensor& prob);
/// Adds the gradients of prob_in_top_k into dclean, dsigma, dtop (each may be nullptr).
void prob_in_top_k_backward(const Tensor& clean, const Tensor& noisy, const Tensor& sigma, const Tensor& top,
                            const Tensor& dprob, Tensor* dclean, Tensor* dsigma, Tensor* dtop);
/// outer i32 [R] or undefined (= 0..R-1); inner i32 [R, c] or undefined (then out is [R]); out i32.
void route_index(const Tensor& outer, const Tensor& inner, int64_t divisor, int64_t inner_size, Tensor& out);
/// x [R, c] floating; experts i32 [R, c] or undefined (then c = n); thresholds [n] of x's dtype;
/// mask has x's shape and dtype.
void threshold_mask(const Tensor& x, const Tensor& experts, const Tensor& thresholds, Tensor& mask);

}  // namespace moe
