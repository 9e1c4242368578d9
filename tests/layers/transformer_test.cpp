// The Transformer encoder-decoder: shapes, incremental decoding equal to full recomputation,
// post-norm and pre-norm variants, the loss over the real targets only, and a copy task that it learns in a few
// hundred CPU steps.
#include "models/transformer.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "data/batch.h"
#include "graph/expr/softmax.h"
#include "training/optimizer.h"

using namespace moe;

namespace {
TransformerConfig tiny(bool pre_norm) {
  TransformerConfig c;
  c.src_vocab = c.tgt_vocab = 12;
  c.d_model = 16;
  c.ffn_dim = 32;
  c.heads = 2;
  c.enc_layers = c.dec_layers = 2;
  c.pre_norm = pre_norm;
  c.dropout = 0;
  c.max_positions = 64;
  return c;
}

Tensor ids(const std::vector<int32_t>& v, int64_t b, int64_t t) { return Tensor::from_vector(v, Shape{b, t}); }
Tensor ones_mask(int64_t b, int64_t t) { return Tensor::from_vector(std::vector<uint8_t>(b * t, 1), Shape{b, t}); }
}  // namespace

TEST_CASE("transformer: incremental decoding equals full recomputation", "[layers][transformer]") {
  for (bool pre_norm : {false, true}) {
    INFO("pre_norm " << pre_norm);
    Transformer net(tiny(pre_norm));
    ParameterStore store(Device::cpu(), 11);
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g);
    // Two sources of different lengths (the second padded), four target steps.
    Tensor src = ids({5, 6, 7, 3, 8, 9, 3, 0}, 2, 4);
    Tensor src_mask = Tensor::from_vector(std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1, 0}, Shape{2, 4});
    Tensor tgt = ids({2, 4, 5, 6, 2, 7, 8, 9}, 2, 4);
    Expr full = log_softmax(net.decode(b, net.encode(b, src, src_mask), src_mask, tgt));  // [8, V]
    const auto want = full.val().to_vector<float>();
    auto state = net.start(b, src, src_mask);
    for (int64_t t = 0; t < 4; ++t) {
      Tensor prev = Tensor::from_vector(
          std::vector<int32_t>{tgt.to_vector<int32_t>()[t], tgt.to_vector<int32_t>()[4 + t]}, Shape{2});
      const auto got = net.step(b, *state, prev).val().to_vector<float>();
      for (int64_t row = 0; row < 2; ++row)
        for (int64_t v = 0; v < 12; ++v) CHECK(got[row * 12 + v] == Approx(want[(row * 4 + t) * 12 + v]).margin(1e-5));
    }
  }
}

TEST_CASE("transformer: reordering hypotheses reorders the caches", "[layers][transformer]") {
  Transformer net(tiny(true));
  ParameterStore store(Device::cpu(), 3);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  Tensor src = ids({5, 6, 3, 7, 8, 3}, 2, 3);
  auto state = net.start(b, src, ones_mask(2, 3));
  net.step(b, *state, Tensor::from_vector(std::vector<int32_t>{2, 2}, Shape{2}));
  state->reorder(b, Tensor::from_vector(std::vector<int32_t>{1, 1, 0}, Shape{3}));
  const auto after = net.step(b, *state, Tensor::from_vector(std::vector<int32_t>{4, 4, 4}, Shape{3})).val();
  const auto v = after.to_vector<float>();
  for (int64_t i = 0; i < 12; ++i) CHECK(v[i] == Approx(v[12 + i]));  // rows 0 and 1 both came from old row 1
  CHECK(after.shape() == Shape{3, 12});
}

TEST_CASE("transformer: source-side caches stay one per sentence, read through a row table", "[layers][transformer]") {
  Transformer net(tiny(true));
  ParameterStore store(Device::cpu(), 5);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  const std::vector<int32_t> s0 = {5, 6, 3}, s1 = {7, 8, 9};
  std::vector<int32_t> both = s0;
  both.insert(both.end(), s1.begin(), s1.end());
  auto state = net.start(b, ids(both, 2, 3), ones_mask(2, 3));
  auto& st = dynamic_cast<Transformer::State&>(*state);
  auto step = [&](std::vector<int32_t> prev) {
    const int64_t n = static_cast<int64_t>(prev.size());
    return net.step(b, *state, Tensor::from_vector(prev, Shape{n})).val().to_vector<float>();
  };
  step({2, 2});
  state->reorder(b, Tensor::from_vector(std::vector<int32_t>{0, 0, 1, 1}, Shape{4}));  // to the beams: gathered
  CHECK(st.sentence == std::vector<int32_t>{0, 0, 1, 1});
  step({4, 5, 6, 7});
  CHECK(st.cross[0].k.shape()[0] == 2);  // the keys of the two sentences, not of the four hypotheses
  CHECK(st.cross[0].key_rows.to_vector<int32_t>() == std::vector<int32_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
  const void* cross_k = st.cross[1].k.raw();
  const void* cross_rows = st.cross[1].key_rows.raw();
  state->reorder(b, Tensor::from_vector(std::vector<int32_t>{1, 0, 3, 3}, Shape{4}));  // within sentences: kept
  CHECK(st.cross[1].k.raw() == cross_k);
  CHECK(st.cross[1].key_rows.raw() == cross_rows);
  const auto got = step({8, 8, 9, 9});
  // Row histories: <s> 5 8 and <s> 4 8 after sentence 0, <s> 7 9 twice after sentence 1.
  std::vector<int32_t> src4 = s0;
  for (const auto* s : {&s0, &s1, &s1}) src4.insert(src4.end(), s->begin(), s->end());
  Tensor tgt = ids({2, 5, 8, 2, 4, 8, 2, 7, 9, 2, 7, 9}, 4, 3);
  const auto want = log_softmax(net.decode(b, net.encode(b, ids(src4, 4, 3), ones_mask(4, 3)), ones_mask(4, 3), tgt))
                        .val()
                        .to_vector<float>();  // [4 * 3, V]
  for (int64_t row = 0; row < 4; ++row)
    for (int64_t v = 0; v < 12; ++v) CHECK(got[row * 12 + v] == Approx(want[(row * 3 + 2) * 12 + v]).margin(1e-5));
  state->reorder(b, Tensor::from_vector(std::vector<int32_t>{2, 3}, Shape{2}));  // sentence 0 finished: gathered
  CHECK(st.src_mask.shape()[0] == 2);
  CHECK(st.sentence == std::vector<int32_t>{1, 1});
  const auto last = step({4, 4});
  CHECK(st.cross[1].k.shape()[0] == 2);
  CHECK(st.self[1].key_rows.shape() == Shape{2, 4});  // 2 hypotheses, 4 positions (layers/kv_cache.h)
  CHECK(st.self[1].k.shape()[0] == 2);                // compacted: half of its 4 rows were no longer named
  for (int64_t v = 0; v < 12; ++v) CHECK(last[v] == last[12 + v]);  // rows 2 and 3 had the same history
}

// data::Batch lists its real positions (src_rows, tgt_rows, tgt_labels) so that the FFN blocks, the output layer and
// the loss skip the padding: the loss and every gradient equal those of all positions with the padding masked out,
// pre-norm and post-norm, and each layer's FFN block ran on the real rows (one index_add node per layer).
TEST_CASE("transformer: the loss over the real positions only equals the masked loss", "[layers][transformer]") {
  for (bool pre_norm : {true, false}) {
    INFO("pre_norm " << pre_norm);
    Transformer net(tiny(pre_norm));
    ParameterStore store(Device::cpu(), 1);
    std::vector<int32_t> a{5, 6, 7}, c{8}, y1{9, 10, 4, 5}, y2{6};
    const data::Batch batch = data::make_batch({a, c}, {y1, y2}, {0, 1}, 0, 2, 3);
    REQUIRE(batch.tgt_rows.numel() == 7);  // of 2 x 5 positions
    REQUIRE(batch.src_rows.numel() == 6);  // of 2 x 4
    int64_t row_blocks = 0;
    auto run = [&](bool packed) {
      Graph g(Device::cpu(), &store);
      Builder b(g);
      const RealPositions real =
          packed ? RealPositions{batch.src_rows, batch.tgt_rows, batch.tgt_labels} : RealPositions{};
      Expr loss = net.loss(b, batch.src, batch.src_mask, batch.tgt_in, batch.tgt_out, 0.1f, batch.tgt_mask, real);
      g.forward();
      store.zero_grads();
      g.backward(loss, 1.0);
      row_blocks = std::count_if(g.tape().begin(), g.tape().end(), [](const auto& n) { return n->op == "index_add"; });
      return std::vector<std::vector<float>>{{float(loss.val().item())}, store.grads().to_vector<float>()};
    };
    const auto dense = run(false);
    CHECK(row_blocks == 0);
    const auto packed = run(true);
    CHECK(row_blocks == 4);  // 2 encoder and 2 decoder layers
    REQUIRE(dense.size() == packed.size());
    CHECK(packed[0][0] == Approx(dense[0][0]).epsilon(1e-6));
    double worst = 0, largest = 0;
    for (size_t p = 1; p < dense.size(); ++p)
      for (size_t i = 0; i < dense[p].size(); ++i) {
        worst = std::max(worst, double(std::abs(dense[p][i] - packed[p][i])));
        largest = std::max(largest, double(std::abs(dense[p][i])));
      }
    INFO("largest gradient " << largest);
    CHECK(worst < 1e-6 * std::max(1.0, largest));  // f32 rounding: the GEMMs run on other row counts
  }
}

TEST_CASE("transformer: learns to copy short sequences", "[layers][transformer][train]") {
  TransformerConfig c = tiny(true);
  c.d_model = 32;
  c.ffn_dim = 64;
  c.heads = 4;
  Transformer net(c);
  ParameterStore store(Device::cpu(), 1);
  auto opt = Optimizer::create("adam");
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> tok(4, 11);
  double first = 0, last = 0;
  for (int step = 0; step < 150; ++step) {
    std::vector<int32_t> src, tin, tout;
    const int64_t batch = 16, len = 5;
    for (int64_t i = 0; i < batch; ++i) {
      std::vector<int32_t> s(len);
      for (auto& x : s) x = tok(rng);
      src.insert(src.end(), s.begin(), s.end());
      src.push_back(3);
      tin.push_back(2);
      tin.insert(tin.end(), s.begin(), s.end());
      tout.insert(tout.end(), s.begin(), s.end());
      tout.push_back(3);
    }
    Graph g(Device::cpu(), &store);
    Builder b(g);
    Expr loss = net.loss(b, ids(src, batch, len + 1), ones_mask(batch, len + 1), ids(tin, batch, len + 1),
                         ids(tout, batch, len + 1), 0.f);
    g.forward();
    store.zero_grads();
    g.backward(loss, 1.0 / (batch * (len + 1)));
    opt->step(store, 3e-3, 1.0);
    const double per_token = loss.val().item() / (batch * (len + 1));
    if (step == 0) first = per_token;
    last = per_token;
  }
  INFO("first " << first << " last " << last);
  CHECK(first > 1.8);  // about log(12) at the start
  CHECK(last < 0.5);   // copying is learned
}
