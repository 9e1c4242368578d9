// CPU-vs-CUDA parity for graph operators (used only by tests/gpu/, which skips without a GPU).
// parity(inputs, build, dtype) runs build() on the CPU in f32 and on cuda:0 in `dtype` (f32 or
// bf16/f16) with the same inputs and the same output-gradient seed, and returns the largest
// normalised error ||gpu - cpu|| / max(||cpu||, tiny) over the output and every input gradient.
// Bars: 1e-5 for f32 (1e-4 where a GEMM uses TF32 or a different summation order), 2e-2 for bf16.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "graph/graph.h"
#include "support/gradcheck.h"

namespace moe::test {

inline double rel_error(const std::vector<double>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
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
      if (is_floating(t.dtype())) t = Tensor::from_vector(t.to_vector<double>(), t.shape(), device, dt);
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
    }
    g.backward_from(out, Tensor::from_vector(seed, out.shape(), device, out.dtype()));
    for (int i : grad_inputs) grads[dev].push_back(leaves[static_cast<size_t>(i)].grad().to_vector<double>());
  }
  ParityResult r;
  r.forward = rel_error(outs[1], outs[0]);
  for (size_t k = 0; k < grads[0].size(); ++k) r.backward = std::max(r.backward, rel_error(grads[1][k], grads[0][k]));
  return r;
}

}  // namespace moe::test
