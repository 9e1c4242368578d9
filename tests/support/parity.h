// CPU-vs-CUDA parity for graph operators (used only by tests/gpu/, which skips without a GPU).
// parity(inputs, build, dtype) runs build() on the CPU in f32 and on cuda:0 in `dtype` (f32 or
// bf16/f16) with the same inputs and the same output-gradient seed, both rounded to `dtype` first (so
// the comparison measures the kernels' arithmetic, not the rounding of their inputs: a gradient that
// sums 4,000 terms to a small total would otherwise differ by the inputs' rounding alone), and returns
// the largest normalised error ||gpu - cpu|| / max(||cpu||, 1e-3 s sqrt(n)) over the output and every
// input gradient, s being the largest RMS of all the reference tensors (the floor: a reference that is
// zero in exact arithmetic, such as the query gradient of attention over a single key, is compared
// against the scale of the problem, not against its own rounding noise).
// Bars: 1e-5 for f32 (1e-4 where a GEMM uses TF32 or a different summation order), 2e-2 for bf16,
// and a quarter of the bf16 bar for f16 (bar() below).
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "graph/graph.h"
#include "support/gradcheck.h"

namespace moe::test {

/// ||a - ref|| / max(||ref||, floor_rms sqrt(n)); infinite when `a` holds a NaN or an infinity.
inline double rel_error(const std::vector<double>& a, const std::vector<double>& ref, double floor_rms = 1e-30) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::max({std::sqrt(den), floor_rms * std::sqrt(double(a.size())), 1e-30});
}

/// Values as they are after a round trip through `dtype` (bf16 / f16 rounding; f32 keeps them).
inline std::vector<double> rounded_to(const std::vector<double>& v, const Shape& shape, DType dtype) {
  if (dtype == DType::f32 || dtype == DType::f64) return v;
  return Tensor::from_vector(v, shape, Device::cpu(), dtype).to_vector<double>();
}

/// The floating dtypes of the CUDA kernels (MOE_FLOAT_SWITCH): the parity tests loop over all three.
inline constexpr DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};

/// The bar of a parity check in `dt`: `f32` in f32, `half` in bf16 (8-bit significand), and `half` / 4 in
/// f16 (11-bit significand: rounding 8 times finer, so the bar keeps a factor 2 more margin than bf16's).
inline double bar(DType dt, double f32, double half) {
  return dt == DType::f32 ? f32 : dt == DType::bf16 ? half : half / 4;
}

/// Random integers stored as `dtype` (u8: 0..255; i64: up to 2^52, so every byte varies and the host's
/// doubles hold them exactly; other types: 0..1000), for the copies that move bytes of any dtype.
inline Tensor random_ints(const Shape& shape, DType dtype, uint32_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t hi = dtype == DType::u8 ? 255 : dtype == DType::i64 ? (int64_t{1} << 52) : 1000;
  std::uniform_int_distribution<int64_t> u(0, hi);
  std::vector<int64_t> v(static_cast<size_t>(shape.numel()));
  for (int64_t& e : v) e = u(rng);
  return Tensor::from_vector(v, shape, Device::cpu(), dtype);
}

struct ParityResult {
  double forward = 0, backward = 0;
};

/// `grad_inputs` lists the inputs that take gradients (floating inputs are converted to `dtype`
/// on the GPU; integer inputs such as indices pass unchanged).
inline ParityResult parity(const std::vector<Tensor>& inputs, const Builder& build, DType dtype,
                           std::vector<int> grad_inputs = {}, bool backward = true) {
  std::vector<std::vector<double>> grads[2];
  std::vector<double> outs[2];
  std::mt19937 rng(77);
  std::vector<double> seed;
  for (int dev = 0; dev < 2; ++dev) {
    const Device device = dev == 0 ? Device::cpu() : Device::cuda(0);
    const DType dt = dev == 0 ? DType::f32 : dtype;
    Graph g(device, nullptr, GraphOptions{.training = backward});
    std::vector<Expr> leaves;
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor t = inputs[i];
      if (is_floating(t.dtype())) t = Tensor::from_vector(rounded_to(t.to_vector<double>(), t.shape(), dtype), t.shape(), device, dt);
      const bool wants = std::find(grad_inputs.begin(), grad_inputs.end(), int(i)) != grad_inputs.end();
      leaves.push_back(g.input(t, wants));
    }
    Expr out = build(g, leaves);
    g.forward();
    outs[dev] = out.val().to_vector<double>();
    if (!backward || grad_inputs.empty()) continue;
    if (seed.empty()) {
      std::uniform_real_distribution<double> u(-1, 1);
      seed.resize(outs[dev].size());
      for (double& s : seed) s = u(rng);
      seed = rounded_to(seed, out.shape(), dtype);
    }
    g.backward_from(out, Tensor::from_vector(seed, out.shape(), device, out.dtype()));
    for (int i : grad_inputs) grads[dev].push_back(leaves[static_cast<size_t>(i)].grad().to_vector<double>());
  }
  ParityResult r;
  auto rms = [](const std::vector<double>& v) {
    double q = 0;
    for (double e : v) q += std::isfinite(e) ? e * e : 0;
    return v.empty() ? 0 : std::sqrt(q / double(v.size()));
  };
  double scale = rms(outs[0]);  // the largest RMS of the reference tensors
  for (const auto& g : grads[0]) scale = std::max(scale, rms(g));
  r.forward = rel_error(outs[1], outs[0], 1e-3 * scale);
  for (size_t k = 0; k < grads[0].size(); ++k)
    r.backward = std::max(r.backward, rel_error(grads[1][k], grads[0][k], 1e-3 * scale));
  return r;
}

}  // namespace moe::test
