// CPU-vs-CUDA parity of the layers of lstm_seq2seq (f32 and bf16, forward and gradients; skipped
// without a GPU): the encoder-decoder attention with both functions (lib/layers/seq2seq_attention.h)
// over a padded source, and the bidirectional LSTM with a projection (lib/layers/lstm_bidirectional.h)
// over right-padded rows (the within-length reversal is a row gather on the device).
#include <catch2/catch.hpp>

#include "layers/lstm_bidirectional.h"
#include "layers/seq2seq_attention.h"
#include "support/parity.h"

using namespace moe;

namespace {
/// u8 [3, s]: row 1 has s - 4 tokens, row 2 has 1, row 0 is full.
Tensor padded_mask(int64_t s) {
  std::vector<uint8_t> m(static_cast<size_t>(3 * s), 1);
  for (int64_t t = s - 4; t < s; ++t) m[static_cast<size_t>(s + t)] = 0;
  for (int64_t t = 1; t < s; ++t) m[static_cast<size_t>(2 * s + t)] = 0;
  return Tensor::from_vector(m, Shape{3, s});
}
}  // namespace

TEST_CASE("seq2seq attention parity", "[gpu][seq2seq]") {
  const int64_t s = 13, d_mem = 24, d_query = 20, n = 16;
  const Tensor mask = padded_mask(s);
  const std::vector<Tensor> in = {test::random_tensor(Shape{3, s, d_mem}, 1), test::random_tensor(Shape{3, d_query}, 2),
                                  test::random_tensor(Shape{d_mem, n}, 3, -0.4, 0.4),
                                  test::random_tensor(Shape{d_query, n}, 4, -0.4, 0.4),
                                  test::random_tensor(Shape{n}, 5)};
  for (const AttentionFunction f : {AttentionFunction::shazeer, AttentionFunction::gnmt})
    for (DType dt : {DType::f32, DType::bf16}) {
      INFO(enum_name(f) << " " << dtype_name(dt));
      auto r = test::parity(
          in,
          [&](Graph& g, const std::vector<Expr>& v) {
            const AttentionWeights w{v[2], v[3], v[4]};
            return attention_context(attention_memory(v[0], mask.to(g.device()), w, f), v[1]);
          },
          dt);
      CHECK(r.forward < test::bar(dt, 1e-4, 2e-2));
      CHECK(r.backward < test::bar(dt, 1e-4, 3e-2));
    }
}

TEST_CASE("bidirectional lstm parity", "[gpu][seq2seq][lstm_cell]") {
  const int64_t s = 9, f = 12, hidden = 20, p = 6;
  const Tensor mask = padded_mask(s);
  auto w = [](const Shape& shape, uint32_t seed) { return test::random_tensor(shape, seed, -0.4, 0.4); };
  const std::vector<Tensor> in = {test::random_tensor(Shape{3, s, f}, 11),
                                  w({f, 4 * hidden}, 12),
                                  w({4 * hidden}, 13),
                                  w({p, 4 * hidden}, 14),
                                  w({hidden, p}, 15),
                                  w({f, 4 * hidden}, 16),
                                  w({4 * hidden}, 17),
                                  w({p, 4 * hidden}, 18),
                                  w({hidden, p}, 19)};
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dt));
    auto r = test::parity(
        in,
        [&](Graph& g, const std::vector<Expr>& v) {
          return bidirectional_lstm(v[0], mask.to(g.device()), LstmWeights{v[1], v[2], v[3], v[4]},
                                    LstmWeights{v[5], v[6], v[7], v[8]});
        },
        dt);
    CHECK(r.forward < test::bar(dt, 1e-4, 2e-2));
    CHECK(r.backward < test::bar(dt, 1e-4, 3e-2));
  }
}
