// CPU-vs-CUDA parity of the MoE layer with the routers after 2017 and what it adds around any router
// (lib/layers/moe_router_*.cpp, moe_capacity.cpp, moe_ffn.cpp): Switch top-1 with a token capacity and its
// balancing loss, top-2 noisy_topk (noise off) with a capacity and the z-loss, expert choice within padded
// sentences, loss-free routing with a bias and its in-place step (sgd_update on the device), shared
// experts; outputs and the gradients of tokens, gate and experts in f32 and bf16, in training and at
// inference. Inputs are rounded to bf16 first so both devices route the same way. Skipped without a GPU.
#include <algorithm>
#include <catch2/catch.hpp>

#include "graph/expr/cast.h"
#include "graph/expr/shape_ops.h"
#include "layers/moe_ffn.h"
#include "support/parity.h"

using namespace moe;

namespace {
Tensor bf16_exact(const Tensor& t) {
  return Tensor::from_vector(
      Tensor::from_vector(t.to_vector<double>(), t.shape(), Device::cpu(), DType::bf16).to_vector<double>(), t.shape());
}

constexpr int64_t kB = 10, kT = 12, kN = kB * kT, kD = 32, kH = 48;

std::vector<Tensor> layer_inputs(int n, uint32_t seed) {
  return {bf16_exact(test::random_tensor(Shape{kN, kD}, seed)),
          bf16_exact(test::random_tensor(Shape{kD, n}, seed + 1, -1, 1)),
          bf16_exact(test::random_tensor(Shape{n, kD, kH}, seed + 2, -0.3, 0.3)),
          bf16_exact(test::random_tensor(Shape{n, kH, kD}, seed + 3, -0.3, 0.3)),
          bf16_exact(test::random_tensor(Shape{2, kD, kH}, seed + 4, -0.3, 0.3)),
          bf16_exact(test::random_tensor(Shape{2, kH, kD}, seed + 5, -0.3, 0.3))};
}

/// The layer's output and (training) its losses, on inputs x, W_g, W1, W2, shared W1, W2.
test::Builder layer_of(const MoeOptions& o, const RouterContext& base) {
  return [o, base](Graph& g, const std::vector<Expr>& in) {
    auto f32 = [](const Expr& e) { return cast(e, DType::f32); };
    MoeWeights w;
    w.w_gate = f32(in[1]);
    w.experts.layers = {in[2], in[3]};
    if (o.shared > 0) w.shared.layers = {in[4], in[5]};
    if (o.router->name() == "loss_free")
      w.router["gate.bias"] = g.input(
          Tensor::from_vector(std::vector<float>{0.05f, 0, -0.05f, 0, 0.1f, 0, 0, -0.1f}, Shape{8}, g.device()));
    RouterContext c = base;
    c.training = g.training();
    const MoeOutput out = moe_forward(in[0], w, o, c);
    std::vector<Expr> parts{reshape(out.y, {out.y.shape().numel()})};
    for (const Expr& l : {out.router_loss, out.z_loss, out.importance_loss})
      if (l.defined()) parts.push_back(reshape(cast(l, in[0].dtype()), {1}));
    return parts.size() == 1 ? parts[0] : concat(parts, 0);
  };
}
}  // namespace

/// The layer of `yaml` on both devices, in training and at inference, f32 and bf16, on padded sentences.
void check_layer_parity(const std::string& yaml) {
  INFO(yaml);
  std::vector<uint8_t> pad(static_cast<size_t>(kN), 0);
  for (int64_t r = 0; r < kB; ++r)
    for (int64_t t = 0; t < kT - (r % 4); ++t) pad[static_cast<size_t>(r * kT + t)] = 1;
  RouterContext sentences;
  sentences.lead = Shape{kB, kT};
  sentences.padding = Tensor::from_vector(pad, Shape{kB, kT});
  const MoeOptions o = moe_options_from_yaml(YAML::Load(yaml), kD, kH);
  const std::vector<Tensor> inputs = layer_inputs(8, 21);
  for (bool training : {true, false}) {
    INFO("training " << training);
    const test::Builder build = layer_of(o, sentences);
    const std::vector<int> grads = training ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{};
    auto r = test::parity(inputs, build, DType::f32, grads, training);
    CHECK(r.forward < 1e-4);
    CHECK(r.backward < 1e-4);
    r = test::parity(inputs, build, DType::bf16, training ? std::vector<int>{0, 2, 3} : std::vector<int>{}, training);
    CHECK(r.forward < 3e-2);
    CHECK(r.backward < 5e-2);
  }
}

TEST_CASE("moe routers parity: switch, capacity, z-loss, expert choice, shared experts", "[gpu][moe][router]") {
  for (const std::string yaml :
       {"{type: moe, gating: switch, experts: 8, k: 1, capacity_factor: 1.0, eval_capacity_factor: 1.0, z_loss: 0.01}",
        "{type: moe, experts: 8, k: 2, noisy: false, capacity_factor: 0.75, z_loss: 0.001}",
        "{type: moe, gating: expert_choice, experts: 8, k: 2, shared: 2}"})
    check_layer_parity(yaml);
}

TEST_CASE("moe routers parity: loss-free routing; its bias steps alike on both devices", "[gpu][moe][router]") {
  check_layer_parity("{type: moe, gating: loss_free, experts: 8, k: 2, bias_rate: 0, shared: 2}");
  const MoeOptions o =
      moe_options_from_yaml(YAML::Load("{type: moe, gating: loss_free, experts: 8, k: 2, bias_rate: 0.25}"), kD, kH);
  const std::vector<Tensor> inputs = layer_inputs(8, 41);
  std::vector<float> after[2];  // a training forward with bias_rate 0.25
  for (int dev = 0; dev < 2; ++dev) {
    const Device device = dev == 0 ? Device::cpu() : Device::cuda(0);
    Graph g(device, nullptr, GraphOptions{.training = true});
    auto f32 = [&](const Tensor& t) {
      return g.input(Tensor::from_vector(t.to_vector<double>(), t.shape(), device, DType::f32));
    };
    MoeWeights w;
    w.w_gate = f32(inputs[1]);
    w.experts.layers = {f32(inputs[2]), f32(inputs[3])};
    const Tensor bias = Tensor::zeros(Shape{8}, DType::f32, device);
    w.router["gate.bias"] = g.input(bias);
    moe_forward(f32(inputs[0]), w, o, {}, {}, true);
    g.forward();
    after[dev] = bias.to_vector<float>();
  }
  CHECK(after[0] == after[1]);
  CHECK(std::count(after[0].begin(), after[0].end(), 0.f) < 8);  // it moved
}
