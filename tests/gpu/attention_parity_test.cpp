// CPU-vs-CUDA parity of fused attention (f32 and bf16) for head sizes 32, 64, 128, 256 and an odd
// one (generic path), with and without causal/padding masks, Hk = 1 and Hk = H, both head_weight
// shapes, a fully padded sequence and Tq = 1 decoding (skipped without a GPU).
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/attention.h"
#include "support/parity.h"

using namespace moe;

namespace {
struct Case {
  int64_t B, Tq, Tk, H, Hk, D;
  bool causal, pad;
  int weight;  // 0 none, 1 [B,H], 2 [B,Tq,H]
};

void check_case(const Case& c, uint32_t seed) {
  std::vector<Tensor> in{test::random_tensor(Shape{c.B, c.Tq, c.H, c.D}, seed, -2, 2),
                         test::random_tensor(Shape{c.B, c.Tk, c.Hk, c.D}, seed + 1, -2, 2),
                         test::random_tensor(Shape{c.B, c.Tk, c.Hk, c.D}, seed + 2, -1, 1)};
  if (c.weight == 1) in.push_back(test::random_tensor(Shape{c.B, c.H}, seed + 3, -1, 1));
  if (c.weight == 2) in.push_back(test::random_tensor(Shape{c.B, c.Tq, c.H}, seed + 3, -1, 1));
  Tensor pad;
  if (c.pad) {  // batch b keeps its first Tk - 5b keys; the last batch (when B > 2) is all padding
    std::vector<int32_t> m(static_cast<size_t>(c.B * c.Tk), 0);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.Tk; ++j) m[static_cast<size_t>(b * c.Tk + j)] = (b < 2 && j < c.Tk - 5 * b) ? 1 : 0;
    pad = Tensor::from_vector(m, Shape{c.B, c.Tk}, Device::cpu(), DType::u8);
  }
  const float scale = 1.f / std::sqrt(static_cast<float>(c.D));
  std::vector<int> grads{0, 1, 2};
  if (c.weight) grads.push_back(3);
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO("B=" << c.B << " Tq=" << c.Tq << " Tk=" << c.Tk << " H=" << c.H << " Hk=" << c.Hk << " D=" << c.D
              << " causal=" << c.causal << " pad=" << c.pad << " weight=" << c.weight << " " << dtype_name(dt));
    const bool causal = c.causal;
    auto r = test::parity(in, [&](Graph&, const std::vector<Expr>& x) {
      return attention(x[0], x[1], x[2], pad, causal, scale, x.size() > 3 ? x[3] : Expr());
    }, dt, grads);
    CHECK(r.forward < (dt == DType::f32 ? 1e-5 : 2e-2));
    CHECK(r.backward < (dt == DType::f32 ? 1e-4 : 3e-2));
  }
}
}  // namespace

TEST_CASE("attention parity: head sizes with and without masks", "[gpu][attention]") {
  uint32_t seed = 100;
  for (int64_t D : {32, 64, 128, 256}) {
    check_case({2, 70, 70, 2, 2, D, false, false, 0}, seed += 10);
    check_case({2, 70, 70, 4, 1, D, true, true, 1}, seed += 10);
    check_case({3, 37, 75, 2, 1, D, true, true, 2}, seed += 10);
  }
}

TEST_CASE("attention parity: generic head size, decoding, Tq > Tk", "[gpu][attention]") {
  check_case({2, 33, 33, 2, 2, 40, true, false, 2}, 7);  // D = 40 runs the padded D = 64 kernel
  check_case({2, 1, 130, 4, 2, 64, true, true, 1}, 8);   // one query against a cache of 130 keys
  check_case({1, 90, 20, 2, 1, 32, true, false, 0}, 9);  // early queries see no key
}

TEST_CASE("attention parity: head sizes off the 8-element grid, wide GQA groups", "[gpu][attention]") {
  // D % 8 != 0: the bf16 tensor-core kernels take the scalar (non-16-byte) tile loads and pad the
  // head to 32 / 128 / 256 with zeros; D = 160 runs the DP = 256 kernels with 16-byte loads.
  check_case({2, 45, 77, 2, 1, 20, true, true, 1}, 11);
  check_case({2, 65, 65, 2, 2, 100, false, true, 2}, 12);
  check_case({2, 33, 70, 2, 1, 160, true, false, 0}, 13);
  check_case({2, 31, 31, 3, 3, 7, false, false, 1}, 14);
  // Eight query heads over two key heads (h reads key head h / 4), causal chunk with Tk > Tq,
  // one sequence fully padded (rows with no visible key: out 0, lse -inf, no gradient, no NaN).
  check_case({3, 50, 130, 8, 2, 64, true, true, 1}, 15);
  check_case({3, 1, 1, 8, 2, 64, false, true, 0}, 16);  // one key: batches 1 and 2 fully masked
}
