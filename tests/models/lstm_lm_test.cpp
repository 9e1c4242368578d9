// The LSTM language model (lib/models/lstm_lm.h): a repeating sequence learned on CPU, incremental
// steps equal to the full sequence (and hypothesis reordering), causality, the projection
// (LSTM-2048-512 shape) and the mixture-of-experts hook (exercised with a dense site), the factory.
#include "models/lstm_lm.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "models/model_registry.h"
#include "training/optimizer.h"

using namespace moe;

namespace {
LstmLmConfig tiny() {
  LstmLmConfig c;
  c.vocab = 12;
  c.embed_dim = 16;
  c.hidden = 16;
  c.layers = 2;
  c.dropout = 0;
  return c;
}
Tensor ids(const std::vector<int32_t>& v, int64_t b, int64_t t) { return Tensor::from_vector(v, Shape{b, t}); }
}  // namespace

TEST_CASE("lstm_lm: incremental steps equal the full sequence", "[models][lstm_lm]") {
  LstmLmConfig c = tiny();
  c.projection = 8;
  c.hidden = 24;
  c.adaptive_softmax_cutoffs = {6};
  c.adaptive_softmax_factor = 2;
  LstmLm lm(c);
  ParameterStore store(Device::cpu(), 4);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  const std::vector<int32_t> seq = {2, 5, 9, 1, 2, 8, 11, 4};
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
  st->reorder(b, Tensor::from_vector(std::vector<int32_t>{1, 1, 0}, Shape{3}));
  const auto after =
      lm.step(b, *st, Tensor::from_vector(std::vector<int32_t>{3, 3, 3}, Shape{3})).val().to_vector<float>();
  for (int v = 0; v < 12; ++v) CHECK(after[v] == Approx(after[12 + v]));
  CHECK(store.value("lstm0.wp").shape() == Shape{24, 8});
  // Causal: a changed future token leaves earlier positions alone.
  const auto other = lm.log_probs(b, ids({3, 5, 3, 3, 3, 8, 11, 4}, 2, 4)).val().to_vector<float>();
  for (int v = 0; v < 24; ++v) CHECK(other[v] == Approx(full[v]).margin(1e-6));
}

TEST_CASE("lstm_lm: learns a repeating sequence", "[models][lstm_lm][train]") {
  for (bool with_moe_hook : {false, true}) {
    INFO("moe hook " << with_moe_hook);
    LstmLmConfig c = tiny();
    if (with_moe_hook) {
      c.moe_after = {0};
      c.moe = YAML::Load("{type: dense, hidden: 32}");
    }
    LstmLm lm(c);
    ParameterStore store(Device::cpu(), 1);
    auto opt = Optimizer::create("adam");
    const std::vector<int32_t> pattern = {4, 9, 6, 11, 5, 7, 10};
    double first = 0, last = 0;
    for (int step = 0; step < 80; ++step) {
      std::vector<std::vector<int32_t>> in, out;
      std::vector<std::vector<float>> mask;
      for (int r = 0; r < 4; ++r) {
        std::vector<int32_t> x, y;
        for (int t = 0; t < 12; ++t) {
          x.push_back(pattern[(r + step + t) % 7]);
          y.push_back(pattern[(r + step + t + 1) % 7]);
        }
        in.push_back(x);
        out.push_back(y);
        mask.emplace_back(12, 1.f);
      }
      data::LmBatch batch = data::make_lm_batch(in, out, mask, {0, 1, 2, 3}, 0);
      Graph g(Device::cpu(), &store, GraphOptions{.training = true, .seed = 3, .step = static_cast<uint64_t>(step)});
      Builder b(g);
      Expr loss = lm.lm_loss(b, batch, 0.f);
      g.forward();
      store.zero_grads();
      g.backward(loss, 1.0 / batch.tokens);
      opt->step(store, 1e-2, 1.0);
      const double per_token = loss.val().item() / batch.tokens;
      if (step == 0) first = per_token;
      last = per_token;
    }
    INFO("first " << first << " last " << last);
    CHECK(first > 1.8);
    CHECK(last < 0.3);
    CHECK((store.find("moe0.fc1.w") >= 0) == with_moe_hook);
  }
}

TEST_CASE("lstm_lm: masked loss, factory and option checks", "[models][lstm_lm]") {
  LstmLmConfig c = tiny();
  c.tie_embeddings = true;
  YAML::Node node = c.to_yaml();
  auto model = create_model(node);
  REQUIRE(model->type() == "lstm_lm");
  CHECK(YAML::Dump(model->config_yaml()) == YAML::Dump(node));
  ParameterStore store(Device::cpu(), 2);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  data::LmBatch batch = data::make_lm_batch({{3, 4, 5}, {6, 7}}, {{4, 5, 6}, {7, 8}}, {{1, 0, 1}, {1, 1}}, {0, 1}, 0);
  const auto* lm = dynamic_cast<const LstmLm*>(model.get());
  const auto lp = lm->log_probs(b, batch.input).val().to_vector<float>();
  const double want = -(lp[0 * 12 + 4] + lp[2 * 12 + 6] + lp[3 * 12 + 7] + lp[4 * 12 + 8]);
  CHECK(model->lm_loss(b, batch, 0.f).val().item() == Approx(want).epsilon(1e-5));
  CHECK(store.find("out.w") < 0);  // tied
  YAML::Node bad = c.to_yaml();
  bad["projection"] = 8;
  CHECK_THROWS_WITH(create_model(bad), Catch::Contains("tie_embeddings"));
  bad = c.to_yaml();
  bad["moe_after"] = std::vector<int>{2};
  CHECK_THROWS_WITH(create_model(bad), Catch::Contains("moe_after"));
  bad = c.to_yaml();
  bad["hiden"] = 3;
  CHECK_THROWS_WITH(create_model(bad), Catch::Contains("model.hiden"));
}

TEST_CASE("lstm_lm: the sparse MoE layer between LSTMs", "[models][lstm_lm][moe]") {
  LstmLmConfig c = tiny();
  c.moe_after = {0};
  c.moe = YAML::Load("{type: moe, experts: 4, k: 2, hidden: 16, w_importance: 0.1, w_load: 0.1}");
  LstmLm lm(c);
  ParameterStore store(Device::cpu(), 3);
  Graph g(Device::cpu(), &store);
  Builder b(g);
  data::LmBatch batch = data::make_lm_batch({{3, 4, 5, 6}, {6, 7, 8, 9}}, {{4, 5, 6, 7}, {7, 8, 9, 10}},
                                            {{1, 1, 1, 1}, {1, 1, 1, 1}}, {0, 1}, 0);
  const Expr loss = lm.lm_loss(b, batch, 0.f);
  g.forward();
  g.backward(loss);
  CHECK(std::isfinite(loss.val().item()));
  CHECK(!b.aux_losses().empty());  // importance and load losses of the MoE layer
  bool gate_params = false;
  for (const auto& e : store.entries()) gate_params |= e.name.rfind("moe0.", 0) == 0;
  CHECK(gate_params);
}
