// The layers of lstm_seq2seq (lib/layers/seq2seq_attention.h, lib/layers/lstm_bidirectional.h): both
// attention functions on a hand-computed case with a padded source position, and their finite-difference
// gradients (memory, query, U, W, V); the within-length reversal, a padded row of the bidirectional LSTM
// equal to the same sentence alone, and its finite-difference gradients (with and without projection).
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/shape_ops.h"
#include "layers/lstm_bidirectional.h"
#include "layers/seq2seq_attention.h"
#include "support/gradcheck.h"

using namespace moe;

namespace {
Tensor f64(const std::vector<double>& v, const Shape& s) {
  return Tensor::from_vector(v, s, Device::cpu(), DType::f64);
}
Tensor mask_of(const std::vector<uint8_t>& v, int64_t b, int64_t s) { return Tensor::from_vector(v, Shape{b, s}); }
}  // namespace

TEST_CASE("seq2seq attention: both functions by hand, padding ignored", "[models][seq2seq][attention]") {
  // One sentence of 3 positions, the last one padding; d = n = 2, U = W = I, V = (1, 2).
  const std::vector<double> x = {1, 0, 0, 1, 5, 5}, y = {0.5, -0.5};
  for (const AttentionFunction f : {AttentionFunction::shazeer, AttentionFunction::gnmt}) {
    INFO(enum_name(f));
    Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
    const AttentionWeights w{g.input(f64({1, 0, 0, 1}, Shape{2, 2})), g.input(f64({1, 0, 0, 1}, Shape{2, 2})),
                             g.input(f64({1, 2}, Shape{2}))};
    const AttentionMemory m = attention_memory(g.input(f64(x, Shape{1, 3, 2})), mask_of({1, 1, 0}, 1, 3), w, f);
    Expr query = g.input(f64(y, Shape{1, 2}));
    double a0, a1;
    if (f == AttentionFunction::shazeer) {  // sum_d V_d tanh(x_d) tanh(y_d)
      a0 = std::tanh(1.0) * std::tanh(0.5);
      a1 = 2 * std::tanh(1.0) * std::tanh(-0.5);
    } else {  // sum_d V_d tanh(x_d + y_d)
      a0 = std::tanh(1.5) + 2 * std::tanh(-0.5);
      a1 = std::tanh(0.5) + 2 * std::tanh(0.5);
    }
    const double p0 = 1 / (1 + std::exp(a1 - a0)), p1 = 1 - p0;
    const auto p = attention_probs(m, query).val().to_vector<double>();
    CHECK(p[0] == Approx(p0).epsilon(1e-12));
    CHECK(p[1] == Approx(p1).epsilon(1e-12));
    CHECK(p[2] == 0.0);
    const auto ctx = attention_context(m, query).val().to_vector<double>();
    CHECK(ctx[0] == Approx(p0).epsilon(1e-12));
    CHECK(ctx[1] == Approx(p1).epsilon(1e-12));
  }
}

TEST_CASE("seq2seq attention: gradients match finite differences", "[models][seq2seq][attention][gradcheck]") {
  // B = 2 (the second sentence has 2 of 3 positions), d_mem 4, d_query 3, n 5.
  const Tensor mask = mask_of({1, 1, 1, 1, 1, 0}, 2, 3);
  for (const AttentionFunction f : {AttentionFunction::shazeer, AttentionFunction::gnmt}) {
    INFO(enum_name(f));
    std::vector<Tensor> in = {test::random_tensor({2, 3, 4}, 1), test::random_tensor({2, 3}, 2),
                              test::random_tensor({4, 5}, 3), test::random_tensor({3, 5}, 4),
                              test::random_tensor({5}, 5)};
    CHECK(test::gradcheck(in, [&](Graph&, const std::vector<Expr>& v) {
            const AttentionWeights w{v[2], v[3], v[4]};
            return attention_context(attention_memory(v[0], mask, w, f), v[1]);
          }) < 1e-6);
  }
}

TEST_CASE("bidirectional lstm: reversal within length; a padded row equals the sentence alone",
          "[models][seq2seq][lstm]") {
  const Tensor mask = mask_of({1, 1, 1, 0, 1, 1, 0, 0}, 2, 4);
  CHECK(reverse_within_length(mask, 2, 4, Device::cpu()).to_vector<int32_t>() ==
        std::vector<int32_t>{2, 1, 0, 3, 5, 4, 6, 7});
  CHECK(reverse_within_length(Tensor(), 1, 3, Device::cpu()).to_vector<int32_t>() == std::vector<int32_t>{2, 1, 0});
  CHECK_THROWS_WITH(reverse_within_length(mask, 2, 3, Device::cpu()), Catch::Contains("does not match"));

  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  auto leaf = [&](const Shape& s, uint32_t seed) { return g.input(test::random_tensor(s, seed)); };
  const LstmWeights fw{leaf({3, 8}, 11), leaf({8}, 12), leaf({2, 8}, 13), Expr()};
  const LstmWeights bw{leaf({3, 12}, 14), leaf({12}, 15), leaf({2, 12}, 16), leaf({3, 2}, 17)};
  const Tensor x = test::random_tensor({2, 4, 3}, 18);
  const auto both = bidirectional_lstm(g.input(x), mask, fw, bw).val().to_vector<double>();  // [2, 4, 4]
  const auto xs = x.to_vector<double>();
  for (int64_t row = 0; row < 2; ++row) {
    const int64_t len = 3 - row;
    std::vector<double> alone_x(xs.begin() + row * 12, xs.begin() + row * 12 + len * 3);
    const auto alone =
        bidirectional_lstm(g.input(f64(alone_x, Shape{1, len, 3})), Tensor(), fw, bw).val().to_vector<double>();
    for (int64_t i = 0; i < len * 4; ++i)
      CHECK(both[static_cast<size_t>(row * 16 + i)] == Approx(alone[i]).epsilon(1e-12));
  }
  // The backward half at the first position has read the whole sentence: it differs from the forward half.
  CHECK(std::abs(both[2] - both[0]) + std::abs(both[3] - both[1]) > 1e-6);
}

TEST_CASE("bidirectional lstm: gradients match finite differences", "[models][seq2seq][lstm][gradcheck]") {
  const Tensor mask = mask_of({1, 1, 1, 1, 1, 0}, 2, 3);
  std::vector<Tensor> in = {test::random_tensor({2, 3, 3}, 21), test::random_tensor({3, 8}, 22),
                            test::random_tensor({8}, 23),       test::random_tensor({2, 8}, 24),
                            test::random_tensor({3, 12}, 25),   test::random_tensor({12}, 26),
                            test::random_tensor({2, 12}, 27),   test::random_tensor({3, 2}, 28)};
  CHECK(test::gradcheck(in, [&](Graph&, const std::vector<Expr>& v) {
          return bidirectional_lstm(v[0], mask, LstmWeights{v[1], v[2], v[3], Expr()},
                                    LstmWeights{v[4], v[5], v[6], v[7]});
        }) < 1e-6);
}
