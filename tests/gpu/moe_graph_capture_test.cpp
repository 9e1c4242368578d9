// An MoE layer's forward and backward captured in a CUDA graph (tensor/cuda_graph.h) equal the same
// work run directly, and a replay after new input values recomputes them: the gate, the sort by expert,
// the grouped GEMMs, the combine and every gradient run from the graph alone (no copy to the host, no
// wait: tests/emu/moe_no_sync_test.cpp). On the emulator and on a GPU; f32 and bf16.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "graph/graph.h"
#include "layers/moe_ffn.h"
#include "support/parity.h"
#include "tensor/cuda_graph.h"
#include "tensor/cuda_runtime.h"

using namespace moe;

namespace {
struct Layer {
  std::vector<Tensor> params;  // x, gate, noise, w1, w2
};

/// y and dL/dx of the layer for its current parameter values, with the backward seeded by `seed`.
struct Result {
  std::vector<double> y, dx;
};

struct Run {
  Graph g;
  std::vector<Expr> in;
  MoeOutput out;
  Run(const Layer& l, const MoeOptions& opt) : g(l.params[0].device()) {
    for (const Tensor& t : l.params) in.push_back(g.input(t, true));
    MoeWeights w;
    w.w_gate = in[1], w.w_noise = in[2];
    w.experts.layers = {in[3], in[4]};
    out = moe_forward(in[0], w, opt, GateNoise{true, 17, 3}, GateNoise{}, true);
  }
  void compute(const Tensor& seed) {
    g.forward();
    g.backward_from(out.y, seed);
  }
  Result result() { return {out.y.val().to_vector<double>(), in[0].grad().to_vector<double>()}; }
};

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}
}  // namespace

TEST_CASE("an MoE layer captured in a CUDA graph equals the direct run, and replays", "[gpu][moe][graph]") {
  const int64_t N = 48, d = 16, h = 32;
  const Device gpu = Device::cuda(0);
  MoeOptions opt;
  opt.dim = d, opt.experts = 8, opt.k = 2, opt.hidden = h;
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dt));
    auto make = [&](Shape s, uint32_t seed, DType type) {
      return Tensor::from_vector(test::random_tensor(s, seed).to_vector<float>(), s, gpu, type);
    };
    Layer l{{make(Shape{N, d}, 1, dt), make(Shape{d, 8}, 2, DType::f32), make(Shape{d, 8}, 3, DType::f32),
             make(Shape{8, d, h}, 4, dt), make(Shape{8, h, d}, 5, dt)}};
    const Tensor seed = make(Shape{N, d}, 6, dt);
    Run direct(l, opt);
    direct.compute(seed);
    const Result want = direct.result();

    Run captured(l, opt);
    CudaGraph graph(gpu, [&] { captured.compute(seed); });
    graph.launch();
    Result got = captured.result();
    const double tol = dt == DType::f32 ? 1e-5 : 2e-2;
    CHECK(max_diff(got.y, want.y) <= tol);
    CHECK(max_diff(got.dx, want.dx) <= tol);

    // New values in x, the graph launched again: as a direct run on them.
    l.params[0].copy_from(make(Shape{N, d}, 7, dt));
    Run again(l, opt);
    again.compute(seed);
    const Result want2 = again.result();
    graph.launch();
    got = captured.result();
    CHECK(max_diff(got.y, want.y) > 0.1);  // it did recompute
    CHECK(max_diff(got.y, want2.y) <= tol);
    CHECK(max_diff(got.dx, want2.dx) <= tol);
  }
}
