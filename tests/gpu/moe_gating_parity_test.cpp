// CPU-vs-CUDA parity of the MoE routing ops (gate noise draws the same Philox normals on both
// devices; the load estimator and its row-reduced threshold gradients; index helpers and masks
// exactly, the threshold mask in f32, bf16 and f16) and of the whole MoE layer (flat and hierarchical,
// noise fixed; batchwise at inference and in training) in f32 and bf16; the routing ops also in f16.
// Inputs are rounded to bf16 first so both devices route the same way. Skipped without a GPU.
#include <catch2/catch.hpp>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/matmul.h"
#include "graph/expr/moe_gating.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "graph/expr/topk.h"
#include "layers/moe_ffn.h"
#include "support/parity.h"

using namespace moe;

namespace {
Tensor bf16_exact(const Tensor& t) {
  return Tensor::from_vector(Tensor::from_vector(t.to_vector<double>(), t.shape(), Device::cpu(), DType::bf16)
                                 .to_vector<double>(),
                             t.shape());
}
}  // namespace

TEST_CASE("moe gating ops parity", "[gpu][moe_gating]") {
  for (auto [rows, n, k] : {std::tuple{1, 2, 1}, {37, 8, 2}, {300, 64, 4}, {5, 257, 3}, {1000, 16, 1}}) {
    INFO(rows << "x" << n << " k=" << k);
    Tensor c = bf16_exact(test::random_tensor(Shape{rows, n}, 3 + n));
    Tensor s = bf16_exact(test::random_tensor(Shape{rows, n}, 4 + n, 0.2, 1.0));
    auto noise = [](Graph&, const std::vector<Expr>& in) { return gate_noise(in[0], in[1], 12, 34); };
    auto r = test::parity({c, s}, noise, DType::f32, {0, 1});
    CHECK(r.forward < 1e-6);
    CHECK(r.backward < 1e-6);
    for (DType dt : {DType::bf16, DType::f16}) {
      INFO(dtype_name(dt));
      r = test::parity({c, s}, noise, dt, {0, 1});
      CHECK(r.forward < test::bar(dt, 0, 2e-2));
      CHECK(r.backward < test::bar(dt, 0, 2e-2));
    }
    // The estimator with noisy = clean + noise (top values from topk: gradients reach the thresholds).
    auto load = [k = k](Graph&, const std::vector<Expr>& in) {
      Expr noisy = gate_noise(in[0], in[1], 5, 6);
      return prob_in_top_k(in[0], noisy, in[1], topk(noisy, k + 1).values);
    };
    r = test::parity({c, s}, load, DType::f32, {0, 1});
    CHECK(r.forward < 1e-5);
    CHECK(r.backward < 1e-4);
    r = test::parity({c, s}, load, DType::bf16, {0, 1});
    CHECK(r.forward < 3e-2);
    // In bf16 / f16 the GPU's noisy values round differently, which can move a threshold: the estimator
    // on a given noisy input instead, whose top-k both devices pick alike, so the gradients compare too.
    Tensor z = bf16_exact(test::random_tensor(Shape{rows, n}, 5 + n));
    auto given = [k = k](Graph&, const std::vector<Expr>& in) {
      return prob_in_top_k(in[0], in[2], in[1], topk(in[2], k + 1).values);
    };
    for (DType dt : test::kFloatTypes) {
      INFO(dtype_name(dt));
      r = test::parity({c, s, z}, given, dt, {0, 1, 2});
      CHECK(r.forward < test::bar(dt, 1e-5, 2e-2));
      CHECK(r.backward < test::bar(dt, 1e-4, 2e-2));
    }
  }
  Tensor x = test::random_tensor(Shape{50, 7}, 9, 0, 1), th = test::random_tensor(Shape{7}, 10, 0.2, 0.8);
  auto mask = [](Graph&, const std::vector<Expr>& in) { return threshold_mask(in[0], in[1]); };
  for (DType dt : test::kFloatTypes) {  // both devices compare the same rounded values
    INFO(dtype_name(dt));
    CHECK(test::parity({x, th}, mask, dt, {}, false).forward == 0.0);
  }
  auto index = [](Graph& g, const std::vector<Expr>&) {
    Expr outer = iota_index(g, 300, 7);
    Expr inner = reshape(iota_index(g, 900, 2), {300, 3});
    return cast(route_index(outer, 3, inner, 11), DType::f32);
  };
  CHECK(test::parity({x}, index, DType::f32, {}, false).forward == 0.0);
}

TEST_CASE("moe layer parity (flat and hierarchical, noise fixed)", "[gpu][moe]") {
  const int64_t N = 200, d = 40, h = 72;
  for (int groups : {0, 4}) {
    INFO("groups " << groups);
    MoeOptions opt;
    opt.dim = d, opt.experts = 16, opt.k = 2, opt.hidden = h, opt.groups = groups, opt.k_secondary = 2;
    const int first = groups ? groups : 16, per = groups ? 16 / groups : 1;
    std::vector<Tensor> inputs = {bf16_exact(test::random_tensor(Shape{N, d}, 1)),
                                  bf16_exact(test::random_tensor(Shape{d, first}, 2, -2, 2)),
                                  bf16_exact(test::random_tensor(Shape{d, first}, 3)),
                                  bf16_exact(test::random_tensor(Shape{16, d, h}, 4, -0.3, 0.3)),
                                  bf16_exact(test::random_tensor(Shape{16, h, d}, 5, -0.3, 0.3)),
                                  bf16_exact(test::random_tensor(Shape{first, d, per}, 6, -2, 2)),
                                  bf16_exact(test::random_tensor(Shape{first, d, per}, 7))};
    auto build = [&](Graph&, const std::vector<Expr>& in) {
      auto f32 = [](const Expr& e) { return cast(e, DType::f32); };
      MoeWeights w{f32(in[1]), f32(in[2]), groups ? f32(in[5]) : Expr(), groups ? f32(in[6]) : Expr(), {},
                   {{in[3], in[4]}, {}}};
      MoeOutput o = moe_forward(in[0], w, opt, GateNoise{true, 3, 1}, GateNoise{groups > 0, 3, 2}, true);
      return concat({reshape(o.y, {N * d}), reshape(cast(o.importance_loss + o.load_loss, in[0].dtype()), {1})}, 0);
    };
    auto r = test::parity(inputs, build, DType::f32, {0, 1, 2, 3, 4});
    CHECK(r.forward < 1e-4);
    CHECK(r.backward < 1e-4);
    r = test::parity(inputs, build, DType::bf16, {0, 3, 4});
    CHECK(r.forward < 3e-2);
    CHECK(r.backward < 5e-2);
  }
}

TEST_CASE("moe layer parity (batchwise: thresholds at inference, the batchwise mask in training)",
          "[gpu][moe][batchwise]") {
  const int64_t N = 200, d = 40, h = 72;
  MoeOptions opt;
  opt.dim = d, opt.experts = 16, opt.k = 2, opt.hidden = h, opt.router = moe_router("batchwise");
  // Experts 0-4 with a low threshold, 5-15 with a high one, and rows of two scales: flat gates (the first
  // 100 rows) pass more than 2k = 4 thresholds, and some spread ones (the rest) pass none.
  std::vector<double> xv = test::random_tensor(Shape{N, d}, 11).to_vector<double>(), tv(16);
  for (int64_t i = 0; i < N * d; ++i) xv[static_cast<size_t>(i)] *= i < N * d / 2 ? 0.2 : 1.5;
  for (int i = 0; i < 16; ++i) tv[static_cast<size_t>(i)] = i < 5 ? 0.045 : 0.5;
  const std::vector<Tensor> inputs = {bf16_exact(Tensor::from_vector(xv, Shape{N, d})),
                                      bf16_exact(test::random_tensor(Shape{d, 16}, 12, -0.6, 0.6)),
                                      bf16_exact(Tensor::from_vector(tv, Shape{16})),
                                      bf16_exact(test::random_tensor(Shape{16, d, h}, 14, -0.3, 0.3)),
                                      bf16_exact(test::random_tensor(Shape{16, h, d}, 15, -0.3, 0.3))};
  {  // On the CPU: the cases the comment names, and no gate so near its threshold that rounding could flip it.
    Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
    const std::vector<double> p = softmax(matmul(g.input(inputs[0]), g.input(inputs[1]))).val().to_vector<double>();
    const std::vector<double> t = inputs[2].to_vector<double>();
    int none = 0, many = 0;
    double margin = 1;
    for (int64_t r = 0; r < N; ++r) {
      int passed = 0;
      for (int i = 0; i < 16; ++i) {
        passed += p[r * 16 + i] > t[i];
        margin = std::min(margin, std::abs(p[r * 16 + i] - t[i]));
      }
      none += passed == 0;
      many += passed > 4;
    }
    CHECK(none > 0);
    CHECK(many > 0);
    CHECK(margin > 1e-5);  // f32 gates differ by ~1e-7 between devices
  }
  for (bool training : {false, true}) {
    INFO("training " << training);
    auto build = [&](Graph&, const std::vector<Expr>& in) {
      auto f32 = [](const Expr& e) { return cast(e, DType::f32); };
      MoeWeights w{f32(in[1]), {}, {}, {}, f32(in[2]), {{in[3], in[4]}, {}}};
      MoeOutput o = moe_forward(in[0], w, opt, {}, {}, training);
      if (!training) return reshape(o.y, {N * d});
      return concat({reshape(o.y, {N * d}), reshape(cast(o.router_loss, in[0].dtype()), {1})}, 0);
    };
    const std::vector<int> grads = training ? std::vector<int>{0, 1, 2, 3, 4} : std::vector<int>{};
    auto r = test::parity(inputs, build, DType::f32, grads, training);
    CHECK(r.forward < 1e-4);
    CHECK(r.backward < 1e-4);
    r = test::parity(inputs, build, DType::bf16, training ? std::vector<int>{0, 3, 4} : std::vector<int>{}, training);
    CHECK(r.forward < 3e-2);
    CHECK(r.backward < 5e-2);
  }
}
