// CPU-vs-CUDA parity of top-k: f32 values and indices exactly (ties break identically on both
// devices), gradients, and bf16 values within rounding; shapes cover the warp-per-row path
// (n <= 1024), the block-per-row path (many rows), the two-stage path (few long rows) and
// k > 32. Skipped without a GPU.
#include <catch2/catch.hpp>

#include "graph/expr/topk.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("topk parity", "[gpu][topk]") {
  for (auto [rows, n, k] : {std::tuple{64, 8, 2},
                            {33, 257, 4},
                            {5, 1, 1},
                            {7, 1024, 8},
                            {3, 5000, 16},
                            {2, 200000, 8},
                            {4, 300, 40},
                            {3, 64, 32},
                            {300, 3000, 4},
                            {1, 150000, 32},
                            {2, 2500, 3}}) {
    INFO(rows << "x" << n << " k=" << k);
    Tensor x = test::random_tensor(Shape{rows, n}, 17 + n, -3, 3);
    Tensor x32 = Tensor::from_vector(x.to_vector<float>(), x.shape());
    Tensor out[2][2];
    for (int dev = 0; dev < 2; ++dev) {
      const Device d = dev ? Device::cuda(0) : Device::cpu();
      out[dev][0] = Tensor::empty(Shape{rows, k}, DType::f32, d);
      out[dev][1] = Tensor::empty(Shape{rows, k}, DType::i32, d);
      topk_forward(x32.to(d), out[dev][0], out[dev][1]);
    }
    CHECK(out[1][0].to_vector<float>() == out[0][0].to_vector<float>());
    CHECK(out[1][1].to_vector<int32_t>() == out[0][1].to_vector<int32_t>());
    auto build = [k = k](Graph&, const std::vector<Expr>& in) { return topk(in[0], k).values; };
    auto r = test::parity({x}, build, DType::f32, {0});
    CHECK(r.forward == 0.0);
    CHECK(r.backward == 0.0);
    CHECK(test::parity({x}, build, DType::bf16, {0}, false).forward < 1e-2);
  }
}
