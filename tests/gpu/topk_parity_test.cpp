// CPU-vs-CUDA parity of top-k in f32, bf16 and f16: values and indices exactly (the GPU reads the
// rounded input the CPU reference reads in f32; ties, frequent after rounding, break to the lower
// index on both devices) and gradients exactly. Every per-thread list size K (k rounded up to 1, 2,
// 4, 8, 16, 32) runs on each path: a warp per row (n <= 1024), a block per row (n <= 2048, or many
// rows) and two stages (few rows longer than 2048: partial top-k of slices, then a merge); k > 32
// takes the stateless passes. Skipped without a GPU.
#include <catch2/catch.hpp>

#include "graph/expr/topk.h"
#include "support/parity.h"

using namespace moe;

namespace {
void check_topk(int64_t rows, int64_t n, int64_t k, DType dt) {
  INFO(rows << "x" << n << " k=" << k << " " << dtype_name(dt));
  const Tensor x = test::random_tensor(Shape{rows, n}, 17 + static_cast<uint32_t>(n + k), -3, 3);
  const Tensor xr = Tensor::from_vector(test::rounded_to(x.to_vector<double>(), x.shape(), dt), x.shape(),
                                        Device::cpu(), DType::f32);
  Tensor out[2][2];
  for (int dev = 0; dev < 2; ++dev) {
    const Device d = dev ? Device::cuda(0) : Device::cpu();
    const DType vt = dev ? dt : DType::f32;
    out[dev][0] = Tensor::empty(Shape{rows, k}, vt, d);
    out[dev][1] = Tensor::empty(Shape{rows, k}, DType::i32, d);
    topk_forward(Tensor::from_vector(xr.to_vector<float>(), x.shape(), d, vt), out[dev][0], out[dev][1]);
  }
  CHECK(out[1][0].to_vector<float>() == out[0][0].to_vector<float>());
  CHECK(out[1][1].to_vector<int32_t>() == out[0][1].to_vector<int32_t>());
  auto build = [k](Graph&, const std::vector<Expr>& in) { return topk(in[0], k).values; };
  const auto r = test::parity({x}, build, dt, {0});
  CHECK(r.forward == 0.0);
  CHECK(r.backward == 0.0);
}
}  // namespace

TEST_CASE("topk parity", "[gpu][topk]") {
  for (auto [rows, n, k] : {std::tuple<int64_t, int64_t, int64_t>{64, 8, 2},
                            {33, 257, 4},
                            {5, 1, 1},
                            {7, 1024, 8},
                            {3, 5000, 16},
                            {2, 200000, 8},
                            {4, 300, 40},
                            {3, 64, 32},
                            {300, 3000, 4},
                            {1, 150000, 32},
                            {2, 2500, 3}})
    for (DType dt : test::kFloatTypes) check_topk(rows, n, k, dt);
}

TEST_CASE("topk parity: every list size on every path, in every float dtype", "[gpu][topk]") {
  for (DType dt : test::kFloatTypes)
    for (int64_t k : {1, 2, 3, 7, 13, 32}) {  // K = 1, 2, 4, 8, 16, 32
      check_topk(5, 300, k, dt);              // a warp per row
      check_topk(2, 1500, k, dt);             // a block per row: one slice of <= 2048
      check_topk(2, 4500, k, dt);             // two stages: 3 slices, then the merge
    }
  check_topk(300, 1100, 5, DType::f16);  // a block per row: enough rows to fill the GPU
  for (DType dt : {DType::bf16, DType::f16}) check_topk(3, 500, 33, dt);  // k > 32
}
