// Broadcasting binary ops: hand-computed values, broadcasting edge cases, finite-difference
// gradients (CPU, f64) including broadcast operands and x op x, and error messages.
#include "graph/expr/binary.h"

#include <catch2/catch.hpp>
#include <tuple>

#include "ops/binary_math.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
std::vector<double> run(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), "test"), a.dtype(), Device::cpu());
  binary_forward(op, a, b, out);
  return out.to_vector<double>();
}
Tensor vec(std::vector<double> v, Shape s, DType dt = DType::f64) {
  return Tensor::from_vector(v, s, Device::cpu(), dt);
}
}  // namespace

TEST_CASE("binary: same-shape values", "[ops][binary]") {
  Tensor a = vec({1, -2, 3, 4}, Shape{2, 2}), b = vec({2, 5, -1, 4}, Shape{2, 2});
  CHECK(run(BinaryOp::add, a, b) == std::vector<double>{3, 3, 2, 8});
  CHECK(run(BinaryOp::sub, a, b) == std::vector<double>{-1, -7, 4, 0});
  CHECK(run(BinaryOp::mul, a, b) == std::vector<double>{2, -10, -3, 16});
  CHECK(run(BinaryOp::div, a, b) == std::vector<double>{0.5, -0.4, -3, 1});
  CHECK(run(BinaryOp::maximum, a, b) == std::vector<double>{2, 5, 3, 4});
  CHECK(run(BinaryOp::minimum, a, b) == std::vector<double>{1, -2, -1, 4});
  // f32 goes through the same path.
  CHECK(run(BinaryOp::mul, vec({1.5, 2}, Shape{2}, DType::f32), vec({2, -3}, Shape{2}, DType::f32)) ==
        std::vector<double>{3, -6});
}

TEST_CASE("binary: broadcasting", "[ops][binary]") {
  Tensor m = vec({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  // Row vector (bias add), column vector, scalar [1] and shape [].
  CHECK(run(BinaryOp::add, m, vec({10, 20, 30}, Shape{3})) == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(run(BinaryOp::sub, m, vec({1, 2}, Shape{2, 1})) == std::vector<double>{0, 1, 2, 2, 3, 4});
  CHECK(run(BinaryOp::mul, vec({2}, Shape{1}), m) == std::vector<double>{2, 4, 6, 8, 10, 12});
  CHECK(run(BinaryOp::div, m, vec({2}, Shape{})) == std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3});
  // [B,1,D] with [T,1] -> [B,T,D].
  Tensor a = vec({1, 2, 3, 4}, Shape{2, 1, 2}), b = vec({10, 20, 30}, Shape{3, 1});
  CHECK(run(BinaryOp::add, a, b) == std::vector<double>{11, 12, 21, 22, 31, 32, 13, 14, 23, 24, 33, 34});
  // Both operands broadcast: [3,1] x [1,2] (outer product).
  CHECK(run(BinaryOp::mul, vec({1, 2, 3}, Shape{3, 1}), vec({10, 100}, Shape{1, 2})) ==
        std::vector<double>{10, 100, 20, 200, 30, 300});
  // Size-0 axes broadcast to empty outputs; [0] with [1] is fine.
  CHECK(run(BinaryOp::add, vec({}, Shape{0, 3}), vec({1, 2, 3}, Shape{3})).empty());
  CHECK(run(BinaryOp::add, vec({}, Shape{0}), vec({1}, Shape{1})).empty());
  // Odd sizes (not multiples of 32) through the general path.
  Tensor x = test::random_tensor(Shape{3, 1, 37}, 1), y = test::random_tensor(Shape{5, 1}, 2);
  const std::vector<double> r = run(BinaryOp::maximum, x, y), xv = x.to_vector<double>(), yv = y.to_vector<double>();
  REQUIRE(r.size() == 3 * 5 * 37);
  for (int i = 0; i < 3; ++i)
    for (int t = 0; t < 5; ++t)
      for (int d = 0; d < 37; ++d) CHECK(r[(i * 5 + t) * 37 + d] == std::max(xv[i * 37 + d], yv[t]));
}

TEST_CASE("binary: finite-difference gradients", "[ops][binary][grad]") {
  const std::pair<Shape, Shape> cases[] = {
      {Shape{1}, Shape{1}}, {Shape{3, 37}, Shape{3, 37}},  {Shape{4, 5}, Shape{5}},    {Shape{4, 5}, Shape{4, 1}},
      {Shape{1}, Shape{6}}, {Shape{2, 1, 3}, Shape{4, 1}}, {Shape{3, 1}, Shape{1, 4}}, {Shape{}, Shape{2, 3}}};
  for (int op = 0; op <= static_cast<int>(BinaryOp::minimum); ++op) {
    const BinaryOp o = static_cast<BinaryOp>(op);
    for (const auto& [sa, sb] : cases) {
      INFO(binary_op_name(o) << " " << sa << " " << sb);
      // b kept away from 0 (div); a and b in disjoint ranges would hide one side of max/min,
      // so use ranges that overlap but make exact ties impossible in practice.
      Tensor a = test::random_tensor(sa, 11 + op, -2, 2), b = test::random_tensor(sb, 23 + op, 0.5, 2.5);
      CHECK(test::gradcheck({a, b}, [o](Graph&, const std::vector<Expr>& in) { return binary(o, in[0], in[1]); }) <
            1e-6);
    }
  }
  // x op x: both gradient contributions land in the same buffer.
  Tensor x = test::random_tensor(Shape{3, 4}, 5, 0.5, 2);
  CHECK(test::gradcheck({x}, [](Graph&, const std::vector<Expr>& in) { return in[0] * in[0] + in[0] / in[0]; }) < 1e-6);
  // Only one side takes a gradient.
  Tensor w = test::random_tensor(Shape{4}, 6);
  CHECK(test::gradcheck({x, w}, [](Graph&, const std::vector<Expr>& in) { return in[0] - in[1]; }, 1e-6, {1}) < 1e-6);
}

TEST_CASE("binary: gradients of broadcast operands by hand", "[ops][binary][grad]") {
  Tensor a = vec({1, 2, 3, 4, 5, 6}, Shape{2, 3}), b = vec({1, 2, 4}, Shape{3});
  Tensor g = vec({1, 1, 1, 2, 2, 2}, Shape{2, 3});
  Tensor da = Tensor::zeros(a.shape(), DType::f64, Device::cpu()), db = vec({100, 100, 100}, Shape{3});
  binary_backward(BinaryOp::mul, a, b, g, &da, &db);
  CHECK(da.to_vector<double>() == std::vector<double>{1, 2, 4, 2, 4, 8});
  CHECK(db.to_vector<double>() == std::vector<double>{109, 112, 115});  // accumulates: 100 + 1*1+2*4, ...
  // maximum: ties go to a.
  Tensor dx = Tensor::zeros(Shape{2}, DType::f64, Device::cpu()),
         dy = Tensor::zeros(Shape{2}, DType::f64, Device::cpu());
  binary_backward(BinaryOp::maximum, vec({1, 3}, Shape{2}), vec({1, 5}, Shape{2}), vec({1, 1}, Shape{2}), &dx, &dy);
  CHECK(dx.to_vector<double>() == std::vector<double>{1, 0});
  CHECK(dy.to_vector<double>() == std::vector<double>{0, 1});
}

TEST_CASE("binary: expressions and scalars", "[ops][binary]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr a = g.input(vec({1, 2, 3}, Shape{3})), b = g.input(vec({4, 5, 6}, Shape{3}));
  CHECK((a + b).val().to_vector<double>() == std::vector<double>{5, 7, 9});
  CHECK((a - b).val().to_vector<double>() == std::vector<double>{-3, -3, -3});
  CHECK((a * b).val().to_vector<double>() == std::vector<double>{4, 10, 18});
  CHECK((b / a).val().to_vector<double>() == std::vector<double>{4, 2.5, 2});
  CHECK(add_scalar(a, 0.5f).val().to_vector<double>() == std::vector<double>{1.5, 2.5, 3.5});
  CHECK(mul_scalar(a, -2.f).val().to_vector<double>() == std::vector<double>{-2, -4, -6});
}

TEST_CASE("binary: errors name the op and both shapes", "[ops][binary][errors]") {
  Tensor a = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu()),
         b = Tensor::zeros(Shape{4}, DType::f32, Device::cpu());
  Tensor out = Tensor::zeros(Shape{2, 3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(binary_forward(BinaryOp::mul, a, b, out),
                    Catch::Contains("mul") && Catch::Contains("[2,3]") && Catch::Contains("[4]"));
  Tensor c = Tensor::zeros(Shape{3}, DType::f32, Device::cpu()),
         wrong = Tensor::zeros(Shape{3, 2}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(binary_forward(BinaryOp::add, a, c, wrong),
                    Catch::Contains("add") && Catch::Contains("[3,2]") && Catch::Contains("[2,3]"));
  Tensor d = Tensor::zeros(Shape{3}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(binary_forward(BinaryOp::sub, a, d, out), Catch::Contains("sub") && Catch::Contains("f64"));
  Graph g(Device::cpu());
  CHECK_THROWS_WITH(g.input(a) + g.input(b),
                    Catch::Contains("add") && Catch::Contains("[2,3]") && Catch::Contains("[4]"));
}

TEST_CASE("binary: broadcast collapse used to pick the CUDA fast paths", "[ops][binary]") {
  auto groups = [](Shape a, Shape b) {
    std::vector<std::tuple<int64_t, bool, bool>> r;
    for (const BroadcastGroup& g : collapse_broadcast(a, b, broadcast_shapes(a, b, "test")))
      r.emplace_back(g.size, g.a_bcast, g.b_bcast);
    return r;
  };
  using G = std::vector<std::tuple<int64_t, bool, bool>>;
  CHECK(groups(Shape{4, 5, 6}, Shape{4, 5, 6}) == G{{120, false, false}});                   // same shape: 1-D
  CHECK(groups(Shape{4, 5, 6}, Shape{6}) == G{{20, false, true}, {6, false, false}});        // bias add
  CHECK(groups(Shape{4, 5, 6}, Shape{4, 5, 1}) == G{{20, false, false}, {6, false, true}});  // column
  CHECK(groups(Shape{1}, Shape{7}) == G{{7, true, false}});                                  // scalar
  CHECK(groups(Shape{1, 1}, Shape{1}).empty());                                              // one element
  CHECK(groups(Shape{2, 1, 3}, Shape{4, 1}) == G{{2, false, true}, {4, true, false}, {3, false, true}});
  // The index map of the last case: out (i, t, d) -> a (i, d), b (t).
  const BroadcastIndex ix = make_broadcast_index(collapse_broadcast(Shape{2, 1, 3}, Shape{4, 1}, Shape{2, 4, 3}));
  int64_t ia, ib;
  ix.map((1 * 4 + 2) * 3 + 1, ia, ib);
  CHECK(ia == 1 * 3 + 1);
  CHECK(ib == 2);
}

TEST_CASE("binary: f32 backward by runs equals the element-wise sum bit for bit", "[ops][binary][grad]") {
  // The CPU backward walks runs along the innermost axis; a broadcast operand's gradient must still be summed
  // in output order, so the result equals the plain loop over every output element.
  const std::vector<std::pair<Shape, Shape>> cases = {
      {Shape{7, 33}, Shape{7, 33}},     {Shape{7, 33}, Shape{33}},        {Shape{7, 33}, Shape{7, 1}},
      {Shape{4, 5, 6}, Shape{4, 1, 6}}, {Shape{5, 1, 9}, Shape{1, 3, 9}}, {Shape{1}, Shape{6, 40}}};
  for (const auto& [sa, sb] : cases)
    for (BinaryOp op :
         {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div, BinaryOp::maximum, BinaryOp::minimum}) {
      const Shape so = broadcast_shapes(sa, sb, "test");
      auto values = [](int64_t n, float scale, float shift) {
        std::vector<float> v(n);
        for (int64_t i = 0; i < n; ++i) v[i] = shift + scale * float((i * 37) % 23) / 7.f;
        return v;
      };
      const std::vector<float> va = values(sa.numel(), 1.3f, 0.2f), vb = values(sb.numel(), -0.7f, 3.1f),
                               vg = values(so.numel(), 0.9f, -1.f);
      Tensor a = Tensor::from_vector(va, sa, Device::cpu()), b = Tensor::from_vector(vb, sb, Device::cpu()),
             g = Tensor::from_vector(vg, so, Device::cpu());
      Tensor da = Tensor::zeros(sa, DType::f32, Device::cpu()), db = Tensor::zeros(sb, DType::f32, Device::cpu());
      binary_backward(op, a, b, g, &da, &db);
      std::vector<float> ra(va.size(), 0.f), rb(vb.size(), 0.f);
      const BroadcastIndex ix = make_broadcast_index(collapse_broadcast(sa, sb, so));
      for (int64_t i = 0; i < so.numel(); ++i) {
        int64_t ia, ib;
        ix.map(i, ia, ib);
        ra[ia] += vg[i] * binary_partial<float>(op, va[ia], vb[ib], false);
        rb[ib] += vg[i] * binary_partial<float>(op, va[ia], vb[ib], true);
      }
      INFO(binary_op_name(op) << " " << sa << " op " << sb);
      CHECK(da.to_vector<float>() == ra);
      CHECK(db.to_vector<float>() == rb);
    }
}
