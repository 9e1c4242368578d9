// Every CPU kernel split across threads (common/cpu_threads.h) against its one-thread run, in f32
// with shapes above the split thresholds: matmul (all transpositions, rows and columns split, two rows
// by a weight larger than L2, a batch), bias_grad (also against a naive column sum), dropout, unary and
// binary (a broadcast operand's gradient), cross-entropy, softmax, layer norm (forward and backward),
// attention (causal, padded, grouped heads; forward and backward) and Adam. Equal bit for bit, except
// matmul within 1e-5.
#include <catch2/catch.hpp>
#include <functional>

#include "common/cpu_threads.h"
#include "ops/attention.h"
#include "ops/binary.h"
#include "ops/cross_entropy.h"
#include "ops/dropout.h"
#include "ops/layer_norm.h"
#include "ops/matmul.h"
#include "ops/optimizer.h"
#include "ops/softmax.h"
#include "ops/unary.h"
#include "support/gradcheck.h"

using namespace moe;
using moe::test::random_tensor;

namespace {
Tensor rnd(const Shape& s, uint32_t seed) { return random_tensor(s, seed, -1, 1, DType::f32); }
Tensor zeros(const Shape& s) { return Tensor::zeros(s, DType::f32, Device::cpu()); }

/// The flattened outputs of fn() with 1 and with 3 threads.
std::pair<std::vector<float>, std::vector<float>> one_and_three(const std::function<std::vector<float>()>& fn) {
  const int old = cpu_threads();
  set_cpu_threads(1);
  auto a = fn();
  set_cpu_threads(3);
  auto b = fn();
  set_cpu_threads(old);
  return {a, b};
}
std::vector<float> cat(std::initializer_list<Tensor> ts) {
  std::vector<float> out;
  for (const Tensor& t : ts) {
    auto v = t.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}
}  // namespace

TEST_CASE("threaded kernels: matmul splits rows, columns and batches", "[ops][threads]") {
  struct Case {
    Shape a, b;
  };
  for (const Case& c : {Case{{301, 64}, {64, 70}}, Case{{9, 256}, {256, 1001}}, Case{{2, 512}, {512, 512}},
                        Case{{6, 40, 32}, {6, 32, 40}}})
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      auto tr = [](Shape s, bool on) {
        auto d = s.vec();
        if (on) std::swap(d[d.size() - 1], d[d.size() - 2]);
        return Shape(d);
      };
      Tensor a = rnd(tr(c.a, ta), 1), b = rnd(tr(c.b, tb), 2);
      const MatmulPlan p = matmul_plan(a.shape(), b.shape(), ta, tb);
      auto [one, three] = one_and_three([&] {
        Tensor out = rnd(p.out, 3);
        matmul_forward(a, b, out, ta, tb, 0.5f, 1.f);
        return out.to_vector<float>();
      });
      REQUIRE(one.size() == three.size());
      for (size_t i = 0; i < one.size(); ++i) REQUIRE(three[i] == Approx(one[i]).epsilon(1e-5).margin(1e-5));
    }
}

TEST_CASE("threaded kernels: bias_grad is the column sum", "[ops][threads]") {
  Tensor dout = rnd(Shape{513, 300}, 4);
  const auto v = dout.to_vector<float>();
  auto [one, three] = one_and_three([&] {
    Tensor db = rnd(Shape{300}, 5);
    bias_grad(dout, db);
    return db.to_vector<float>();
  });
  CHECK(one == three);
  const auto start = rnd(Shape{300}, 5).to_vector<float>();
  for (int64_t j = 0; j < 300; ++j) {
    float s = 0;
    for (int64_t i = 0; i < 513; ++i) s += v[i * 300 + j];
    REQUIRE(one[j] == start[j] + s);  // the same order of additions as the naive loop
  }
}

TEST_CASE("threaded kernels: element-wise ops, softmax and layer norm", "[ops][threads]") {
  Tensor x = rnd(Shape{400, 256}, 6), y2 = rnd(Shape{256}, 7), dy = rnd(Shape{400, 256}, 8);
  auto same = [](const std::function<std::vector<float>()>& fn) {
    auto [one, three] = one_and_three(fn);
    CHECK(one == three);
  };
  same([&] {
    Tensor y = zeros(x.shape()), dx = rnd(x.shape(), 9);
    dropout_forward(x, y, 0.1f, 42, 3);
    dropout_backward(dy, dx, 0.1f, 42, 3);
    return cat({y, dx});
  });
  same([&] {
    Tensor y = zeros(x.shape()), dx = zeros(x.shape());
    unary_forward(UnaryOp::gelu, x, y);
    unary_backward(UnaryOp::gelu, x, y, dy, dx);
    return cat({y, dx});
  });
  same([&] {
    Tensor out = zeros(x.shape()), da = zeros(x.shape()), db = zeros(y2.shape());
    binary_forward(BinaryOp::mul, x, y2, out);
    binary_backward(BinaryOp::mul, x, y2, dy, &da, &db);
    return cat({out, da, db});
  });
  for (bool log : {false, true})
    same([&] {
      Tensor y = zeros(x.shape()), dx = zeros(x.shape());
      softmax_forward(x, Tensor(), y, log);
      softmax_backward(y, dy, dx, log);
      return cat({y, dx});
    });
  same([&] {
    Tensor g = rnd(Shape{256}, 10), b = rnd(Shape{256}, 11), y = zeros(x.shape()), mean = zeros(Shape{400}),
           rstd = zeros(Shape{400}), dx = zeros(x.shape()), dg = zeros(Shape{256}), dbeta = zeros(Shape{256});
    layer_norm_forward(x, g, b, y, mean, rstd);
    layer_norm_backward(x, g, mean, rstd, dy, dx, dg, dbeta);
    return cat({y, mean, rstd, dx, dg, dbeta});
  });
  same([&] {
    std::vector<int32_t> tv(400);
    for (size_t i = 0; i < tv.size(); ++i) tv[i] = i % 7 == 0 ? 0 : int32_t(i * 37 % 256);  // 0 = ignored
    Tensor t = Tensor::from_vector(tv, Shape{400}, Device::cpu(), DType::i32);
    Tensor loss = zeros(Shape{400}), lse = zeros(Shape{400}), dl = rnd(Shape{400}, 18), dx = zeros(x.shape());
    cross_entropy_forward(x, t, loss, lse, 0.1f, 0);
    cross_entropy_backward(x, t, lse, dl, dx, 0.1f, 0);
    return cat({loss, lse, dx});
  });
  same([&] {
    Tensor p = rnd(Shape{70000}, 12), g = rnd(Shape{70000}, 13), m = zeros(Shape{70000}), v = zeros(Shape{70000});
    adam_update(p, g, m, v, 1e-3f, 0.9f, 0.98f, 1e-8f, 0.01f, true, 3, 1.f);
    return cat({p, m, v});
  });
}

TEST_CASE("threaded kernels: attention forward and backward", "[ops][threads]") {
  for (int64_t hk : {4, 2}) {
    const int64_t B = 3, Tq = 37, Tk = 41, H = 4, D = 16;
    Tensor q = rnd(Shape{B, Tq, H, D}, 14), k = rnd(Shape{B, Tk, hk, D}, 15), v = rnd(Shape{B, Tk, hk, D}, 16);
    Tensor dout = rnd(Shape{B, Tq, H, D}, 17);
    std::vector<int32_t> keep(static_cast<size_t>(B * Tk), 1);
    for (int64_t j = 30; j < Tk; ++j) keep[static_cast<size_t>(Tk + j)] = 0;  // sentence 1 is padded
    Tensor pad = Tensor::from_vector(keep, Shape{B, Tk}, Device::cpu(), DType::u8);
    for (bool causal : {false, true}) {
      auto [one, three] = one_and_three([&] {
        Tensor out = zeros(q.shape()), lse = zeros(Shape{B, H, Tq});
        attention_forward(q, k, v, pad, causal, 0.25f, Tensor(), out, lse);
        Tensor dq = zeros(q.shape()), dk = zeros(k.shape()), dv = zeros(v.shape()), dw;
        attention_backward(q, k, v, pad, causal, 0.25f, Tensor(), out, lse, dout, dq, dk, dv, dw);
        return cat({out, lse, dq, dk, dv});
      });
      CHECK(one == three);
    }
  }
}
