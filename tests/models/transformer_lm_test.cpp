// The decoder-only Transformer LM (lib/models/transformer_lm.h): causal masking (a changed future
// token leaves earlier log-probabilities and masked losses unchanged), the masked loss equal to the
// log-probabilities it sums, incremental decoding equal to full recomputation, a repeating sequence
// learned on CPU, adaptive input/softmax tying, and the model factory.
#include "models/transformer_lm.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "models/model_registry.h"
#include "training/optimizer.h"

using namespace moe;

namespace {
TransformerLmConfig tiny(bool adaptive, bool pre_norm = true, const std::string& positions = "sinusoidal") {
  TransformerLmConfig c;
  c.vocab = 12;
  c.d_model = 16;
  c.ffn_dim = 32;
  c.heads = 2;
  c.layers = 2;
  c.pre_norm = c.final_norm = pre_norm;
  c.positions = parse_enum<Positions>(positions, "positions");
  c.dropout = 0;
  c.max_positions = 64;
  if (adaptive) {
    c.adaptive_input_cutoffs = c.adaptive_softmax_cutoffs = {5, 9};
    c.adaptive_input_factor = c.adaptive_softmax_factor = 2;
  }
  return c;
}
Tensor ids(const std::vector<int32_t>& v, int64_t b, int64_t t) { return Tensor::from_vector(v, Shape{b, t}); }
}  // namespace

TEST_CASE("transformer_lm: a future token does not change earlier predictions", "[models][transformer_lm]") {
  for (bool adaptive : {false, true}) {
    for (const std::string pos : {"sinusoidal", "learned"}) {
      INFO("adaptive " << adaptive << " positions " << pos);
      TransformerLm lm(tiny(adaptive, true, pos));
      ParameterStore store(Device::cpu(), 7);
      Graph g(Device::cpu(), &store, GraphOptions{.training = false});
      Builder b(g);
      const std::vector<int32_t> a = {4, 7, 1, 10, 3, 6}, c = {4, 7, 1, 2, 11, 0};  // differ from position 3 on
      const auto la = lm.log_probs(b, ids(a, 1, 6)).val().to_vector<float>();
      const auto lc = lm.log_probs(b, ids(c, 1, 6)).val().to_vector<float>();
      for (int t = 0; t < 3; ++t)
        for (int v = 0; v < 12; ++v) CHECK(la[t * 12 + v] == Approx(lc[t * 12 + v]).margin(1e-6));
      bool later_differs = false;
      for (int v = 0; v < 12; ++v) later_differs |= std::abs(la[3 * 12 + v] - lc[3 * 12 + v]) > 1e-4;
      CHECK(later_differs);
      // The loss over the first three targets (mask) ignores the rest of the sequence.
      const Tensor mask = Tensor::from_vector(std::vector<float>{1, 1, 1, 0, 0, 0}, Shape{1, 6});
      const Tensor target = ids({7, 1, 10, 3, 6, 5}, 1, 6);
      const double loss_a = lm.loss(b, ids(a, 1, 6), target, mask, 0.f).val().item();
      const double loss_c = lm.loss(b, ids(c, 1, 6), ids({7, 1, 10, 11, 0, 9}, 1, 6), mask, 0.f).val().item();
      CHECK(loss_a == Approx(loss_c).epsilon(1e-6));
      CHECK(loss_a == Approx(-(la[0 * 12 + 7] + la[1 * 12 + 1] + la[2 * 12 + 10])).epsilon(1e-5));
    }
  }
}

TEST_CASE("transformer_lm: lm_loss sums the scored targets of a batch", "[models][transformer_lm]") {
  TransformerLm lm(tiny(false, false));
  ParameterStore store(Device::cpu(), 2);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  data::LmBatch batch = data::make_lm_batch({{3, 4, 5}, {6, 7}}, {{4, 5, 6}, {7, 8}}, {{1, 1, 1}, {0, 1}}, {0, 1}, 0);
  const auto lp = lm.log_probs(b, batch.input).val().to_vector<float>();
  const double want = -(lp[0 * 12 + 4] + lp[1 * 12 + 5] + lp[2 * 12 + 6] + lp[4 * 12 + 8]);
  CHECK(lm.lm_loss(b, batch, 0.f).val().item() == Approx(want).epsilon(1e-5));
  CHECK(batch.tokens == 4);
}

TEST_CASE("transformer_lm: incremental decoding equals full recomputation", "[models][transformer_lm]") {
  for (bool adaptive : {false, true}) {
    INFO("adaptive " << adaptive);
    TransformerLm lm(tiny(adaptive, true, adaptive ? "learned" : "sinusoidal"));
    ParameterStore store(Device::cpu(), 9);
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g);
    const std::vector<int32_t> seq = {2, 5, 9, 1, 2, 8, 11, 4};  // two rows of four
    std::vector<int32_t> read = seq;  // what the steps read: </s> for the search's first <s> (models/decoder.h)
    read[0] = read[4] = 3;
    const auto full = lm.log_probs(b, ids(read, 2, 4)).val().to_vector<float>();
    auto st = lm.start(b);
    for (int t = 0; t < 4; ++t) {
      const auto got = lm.step(b, *st, Tensor::from_vector(std::vector<int32_t>{seq[t], seq[4 + t]}, Shape{2}))
                           .val()
                           .to_vector<float>();
      for (int r = 0; r < 2; ++r)
        for (int v = 0; v < 12; ++v) CHECK(got[r * 12 + v] == Approx(full[(r * 4 + t) * 12 + v]).margin(1e-5));
    }
    st->reorder(b, Tensor::from_vector(std::vector<int32_t>{1, 1}, Shape{2}));
    const auto after =
        lm.step(b, *st, Tensor::from_vector(std::vector<int32_t>{3, 3}, Shape{2})).val().to_vector<float>();
    for (int v = 0; v < 12; ++v) CHECK(after[v] == Approx(after[12 + v]));
  }
}

TEST_CASE("transformer_lm: learns a repeating sequence", "[models][transformer_lm][train]") {
  for (bool adaptive : {false, true}) {
    INFO("adaptive " << adaptive);
    TransformerLmConfig c = tiny(adaptive);
    c.d_model = 32;
    c.ffn_dim = 64;
    c.heads = 4;
    TransformerLm lm(c);
    ParameterStore store(Device::cpu(), 1);
    auto opt = Optimizer::create("adam");
    const std::vector<int32_t> pattern = {4, 9, 6, 11, 5, 7, 10};  // period 7, bands of all three
    double first = 0, last = 0;
    for (int step = 0; step < 60; ++step) {
      std::vector<std::vector<int32_t>> in, out;
      std::vector<std::vector<float>> mask;
      for (int r = 0; r < 4; ++r) {
        std::vector<int32_t> x, y;
        for (int t = 0; t < 15; ++t) {
          x.push_back(pattern[(r + step + t) % 7]);
          y.push_back(pattern[(r + step + t + 1) % 7]);
        }
        in.push_back(x);
        out.push_back(y);
        mask.emplace_back(15, 1.f);
      }
      data::LmBatch batch = data::make_lm_batch(in, out, mask, {0, 1, 2, 3}, 0);
      Graph g(Device::cpu(), &store, GraphOptions{.training = true, .seed = 3, .step = static_cast<uint64_t>(step)});
      Builder b(g);
      Expr loss = lm.lm_loss(b, batch, 0.f);
      g.forward();
      store.zero_grads();
      g.backward(loss, 1.0 / batch.tokens);
      opt->step(store, 3e-3, 1.0);
      const double per_token = loss.val().item() / batch.tokens;
      if (step == 0) first = per_token;
      last = per_token;
    }
    INFO("first " << first << " last " << last);
    CHECK(first > 1.8);  // about log(12)
    CHECK(last < 0.3);   // the period is learned
  }
}

TEST_CASE("transformer_lm: tied adaptive weights and the model factory", "[models][transformer_lm]") {
  TransformerLmConfig c = tiny(true);
  c.tie_adaptive_proj = true;
  YAML::Node node = c.to_yaml();
  auto model = create_model(node);
  REQUIRE(model->type() == "transformer_lm");
  CHECK(model->is_language_model());
  CHECK(YAML::Dump(model->config_yaml()) == YAML::Dump(node));
  ParameterStore store(Device::cpu(), 1);
  Graph g(Device::cpu(), &store);
  Builder b(g);
  data::LmBatch batch = data::make_lm_batch({{3, 6, 10}}, {{6, 10, 11}}, {{1, 1, 1}}, {0}, 0);
  Expr loss = model->lm_loss(b, batch, 0.1f);
  g.forward();
  g.backward(loss);
  CHECK(store.find("adaptive_input.emb2") >= 0);
  CHECK(store.find("adaptive_softmax.tail2.out") < 0);   // tied to adaptive_input.emb2
  CHECK(store.find("adaptive_softmax.tail2.proj") < 0);  // tied to adaptive_input.proj2
  CHECK(store.find("adaptive_softmax.head.clusters") >= 0);
  CHECK(std::isfinite(loss.val().item()));
  YAML::Node bad = c.to_yaml();
  bad["dropuot"] = 0.1;
  CHECK_THROWS_WITH(create_model(bad), Catch::Contains("model.dropuot"));
  bad = c.to_yaml();
  bad["adaptive_softmax_cutoffs"] = std::vector<int64_t>{5};
  CHECK_THROWS_WITH(create_model(bad), Catch::Contains("tie_embeddings"));
  bad = c.to_yaml();
  bad["positions"] = "rotary";
  CHECK_THROWS_WITH(create_model(bad), Catch::Contains("rotary"));
  bad = c.to_yaml();
  bad["type"] = "gru_lm";
  CHECK_THROWS_WITH(create_model(bad), Catch::Contains("lstm_lm"));
}

TEST_CASE("transformer_mlm: bidirectional, padding keys ignored", "[models][transformer_lm][mlm]") {
  TransformerLmConfig c = tiny(false);
  c.causal = false;
  YAML::Node node = c.to_yaml();
  CHECK(node["type"].as<std::string>() == "transformer_mlm");
  auto model = create_model(node);
  REQUIRE(model->type() == "transformer_mlm");
  const auto& mlm = dynamic_cast<const TransformerLm&>(*model);
  ParameterStore store(Device::cpu(), 5);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  // A later token changes the prediction at position 0.
  const auto a = mlm.log_probs(b, ids({4, 7, 1, 10}, 1, 4)).val().to_vector<float>();
  const auto d = mlm.log_probs(b, ids({4, 7, 1, 11}, 1, 4)).val().to_vector<float>();
  bool differs = false;
  for (int v = 0; v < 12; ++v) differs |= std::abs(a[v] - d[v]) > 1e-4;
  CHECK(differs);
  // Padding (id 0) at the end of a row is not attended to.
  const auto padded = mlm.log_probs(b, ids({4, 7, 1, 10, 0, 0}, 1, 6)).val().to_vector<float>();
  for (int k = 0; k < 4 * 12; ++k) CHECK(padded[k] == Approx(a[k]).margin(1e-5));
  // Masked-LM loss: the selected positions only.
  data::LmBatch batch = data::make_lm_batch({{4, 1, 1, 10}}, {{4, 7, 9, 10}}, {{0, 1, 1, 0}}, {0}, 0);
  const auto lp = mlm.log_probs(b, batch.input).val().to_vector<float>();
  CHECK(mlm.lm_loss(b, batch, 0.f).val().item() == Approx(-(lp[1 * 12 + 7] + lp[2 * 12 + 9])).epsilon(1e-5));
  auto st = mlm.start(b);
  CHECK_THROWS_WITH(mlm.step(b, *st, Tensor::from_vector(std::vector<int32_t>{3}, Shape{1})),
                    Catch::Contains("transformer_mlm"));
}
