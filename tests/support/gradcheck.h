// Finite-difference gradient check for graph operators (CPU, double precision).
// gradcheck(inputs, build) makes each input a graph leaf that takes a gradient, builds
// out = build(leaves), and compares d(sum(out * w))/d(input) from backward() with central
// differences (f(x+h) - f(x-h)) / 2h, for random fixed weights w. Returns the largest error
// relative to max(1, |numeric|), which tests compare with a tolerance (1e-6 is typical in f64).
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "graph/graph.h"

namespace moe::test {

using Builder = std::function<Expr(Graph&, const std::vector<Expr>&)>;

/// Random f64 CPU tensor with values in [lo, hi].
inline Tensor random_tensor(const Shape& shape, uint32_t seed, double lo = -1, double hi = 1,
                            DType dtype = DType::f64, Device device = Device::cpu()) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (double& x : v) x = u(rng);
  return Tensor::from_vector(v, shape, device, dtype);
}

/// sum(out * w) as a double, computed on the host (no graph ops needed).
inline double weighted_sum(const Tensor& out, const std::vector<double>& w) {
  const std::vector<double> v = out.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

/// Builds the graph for `inputs` in inference mode and returns its output values.
inline Tensor evaluate(const std::vector<Tensor>& inputs, const Builder& build) {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  std::vector<Expr> leaves;
  for (const Tensor& t : inputs) leaves.push_back(g.input(t));
  return build(g, leaves).val();
}

/// Maximum relative error between analytic and numeric gradients of every input in `check`
/// (all inputs by default); `h` is the finite-difference step.
inline double gradcheck(const std::vector<Tensor>& inputs, const Builder& build, double h = 1e-6,
                        std::vector<int> check = {}) {
  if (check.empty())
    for (size_t i = 0; i < inputs.size(); ++i) check.push_back(static_cast<int>(i));
  // Analytic gradients.
  Graph g(Device::cpu());
  std::vector<Expr> leaves;
  for (size_t i = 0; i < inputs.size(); ++i)
    leaves.push_back(g.input(inputs[i], std::find(check.begin(), check.end(), int(i)) != check.end()));
  Expr out = build(g, leaves);
  g.forward();
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<double> w(static_cast<size_t>(out.shape().numel()));
  for (double& x : w) x = u(rng);
  g.backward_from(out, Tensor::from_vector(w, out.shape(), Device::cpu(), out.dtype()));

  double worst = 0;
  for (int i : check) {
    const Tensor& grad = leaves[static_cast<size_t>(i)].grad();
    const std::vector<double> analytic =
        grad.defined() ? grad.to_vector<double>() : std::vector<double>(static_cast<size_t>(inputs[i].numel()), 0.0);
    std::vector<Tensor> probe = inputs;
    for (int64_t k = 0; k < inputs[static_cast<size_t>(i)].numel(); ++k) {
      std::vector<double> base = inputs[static_cast<size_t>(i)].to_vector<double>();
      auto at = [&](double delta) {
        std::vector<double> v = base;
        v[static_cast<size_t>(k)] += delta;
        probe[static_cast<size_t>(i)] = Tensor::from_vector(v, inputs[i].shape(), Device::cpu(), inputs[i].dtype());
        return weighted_sum(evaluate(probe, build), w);
      };
      const double numeric = (at(h) - at(-h)) / (2 * h);
      const double err = std::abs(numeric - analytic[static_cast<size_t>(k)]) / std::max(1.0, std::abs(numeric));
      worst = std::max(worst, err);
    }
    probe[static_cast<size_t>(i)] = inputs[static_cast<size_t>(i)];
  }
  return worst;
}

}  // namespace moe::test
