// An MoE layer's forward and backward on a GPU make no device-to-host copy and never wait for the device
// (the CUDA emulator counts both: moe_emu::host_traffic), so a whole update can be captured in a CUDA
// graph: the gate, the sort by expert, the grouped GEMMs, the combine and all their gradients run from
// the queue alone, with expert sizes that stay on the device. Flat and hierarchical noisy top-k, and the
// batchwise gate at inference; the flat layer with expert biases (their gradient a segment sum on the device).
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "graph/graph.h"
#include "layers/moe_ffn.h"
#include "moe_emu/control.h"
#include "support/host_traffic.h"
#include "support/parity.h"
#include "tensor/cuda_runtime.h"

using namespace moe;

TEST_CASE("an MoE layer's forward and backward make no copy to the host and no host wait", "[emu][moe][no_sync]") {
  const int64_t N = 40, d = 16, h = 24;
  const int n = 8, k = 2;
  const Device gpu = Device::cuda(0);
  for (const char* kind : {"flat", "hierarchical", "batchwise inference"}) {
    MoeOptions opt;
    opt.dim = d, opt.experts = n, opt.k = k, opt.hidden = h;
    const bool hierarchical = std::string(kind) == "hierarchical", batchwise = std::string(kind) == "batchwise inference";
    if (hierarchical) opt.groups = 2, opt.k_secondary = 2;
    if (batchwise) opt.router = moe_router("batchwise");
    Graph g(gpu);
    auto f32 = [&](Shape s, uint32_t seed) {
      return Tensor::from_vector(test::random_tensor(s, seed).to_vector<float>(), s, gpu, DType::f32);
    };
    auto param = [&](Shape s, uint32_t seed) { return g.input(f32(s, seed), true); };
    MoeWeights w;
    const int per = hierarchical ? n / opt.groups : n;
    w.w_gate = param(Shape{d, hierarchical ? int64_t(opt.groups) : int64_t(n)}, 2);
    if (!batchwise) w.w_noise = param(w.w_gate.shape(), 3);
    if (hierarchical) w.w_gate2 = param(Shape{opt.groups, d, per}, 4), w.w_noise2 = param(Shape{opt.groups, d, per}, 5);
    if (batchwise) w.thresholds = param(Shape{n}, 6);
    w.experts.layers = {param(Shape{n, d, h}, 7), param(Shape{n, h, d}, 8)};
    if (std::string(kind) == "flat") w.experts.biases = {param(Shape{n, h}, 10), param(Shape{n, d}, 11)};
    Expr x = param(Shape{N, d}, 1);
    const Tensor seed = f32(Shape{N, d}, 9);
    cuda::synchronize(gpu.index);  // the uploads above are the test's, not the layer's
    const moe_emu::HostTraffic before = moe_emu::host_traffic();
    const MoeOutput out = moe_forward(x, w, opt, GateNoise{!batchwise, 17, 3}, GateNoise{hierarchical, 17, 4}, !batchwise);
    g.forward();
    if (!batchwise) g.backward_from(out.y, seed);
    const test::Traffic t = test::traffic_since(before);
    INFO(kind << ": " << t.copies << " copies to the host, " << t.waits << " host waits");
    CHECK(t.copies == 0);
    CHECK(t.waits == 0);
    // ... and it computed something: the output and the gradients are finite.
    for (double v : out.y.val().to_vector<double>()) REQUIRE(std::isfinite(v));
    if (!batchwise)
      for (double v : x.grad().to_vector<double>()) REQUIRE(std::isfinite(v));
    for (const Expr& b : w.experts.biases)
      for (double v : b.grad().to_vector<double>()) REQUIRE(std::isfinite(v));
  }
}
