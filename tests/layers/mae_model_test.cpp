// MAE gate inputs and MAE inside the models: hand-computed gate-input policies; causal policies leak
// nothing from the future (full_mean does, by design); incremental decoding with per-site gate state
// equals full recomputation at the layer, in the Transformer (also through beam reordering) and in the
// LM; full_mean decoder gates decode as the prefix mean; padding never enters a gate; UNI-MAE equals
// MHA in a Transformer; F and G training steps; the gate recorder; running statistics in checkpoints.
#include <catch2/catch.hpp>
#include <filesystem>

#include "graph/expr/softmax.h"
#include "layers/gate_recorder.h"
#include "layers/mae_gate_input.h"
#include "mae_test_util.h"
#include "models/checkpoint.h"
#include "models/transformer.h"
#include "models/transformer_lm.h"
#include "models/transformer_model.h"

using namespace moe;
using test::ids;
using test::mae_opts;
using test::step_ids;
using test::tiny_lm;
using test::tiny_mt;
using test::u8;

namespace {
constexpr int64_t D = 8;

/// Full teacher-forced log-probabilities [B * T, V] and the step-by-step ones (same layout).
std::pair<std::vector<float>, std::vector<float>> mt_full_and_steps(const Transformer& net, ParameterStore& store,
                                                                    const Tensor& src, const Tensor& mask,
                                                                    const Tensor& tgt) {
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  const auto full = log_softmax(net.decode(b, net.encode(b, src, mask), mask, tgt)).val().to_vector<float>();
  const int64_t rows = tgt.shape()[0], len = tgt.shape()[1], v = 12;
  std::vector<float> steps(full.size());
  auto st = net.start(b, src, mask);
  for (int64_t t = 0; t < len; ++t) {
    const auto got = net.step(b, *st, step_ids(tgt, t)).val().to_vector<float>();
    for (int64_t r = 0; r < rows; ++r)
      std::copy(got.begin() + r * v, got.begin() + (r + 1) * v, steps.begin() + (r * len + t) * v);
  }
  return {full, steps};
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b, size_t begin = 0, size_t end = SIZE_MAX) {
  double worst = 0;
  for (size_t i = begin; i < std::min(end, a.size()); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
  return worst;
}
}  // namespace

TEST_CASE("mae: gate-input policies by hand", "[layers][mae][gate_input]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false, .compute_dtype = DType::f64});
  Expr x = g.input(Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 10, 20, 30, 40}, Shape{2, 4, 1}));
  const Tensor pad = u8({1, 1, 1, 1, 1, 1, 0, 0}, 2, 4);
  AttentionInput in{x, x, Tensor(), true, true, nullptr, pad, Expr()};
  auto run = [&](const std::string& policy, int64_t w) {
    return mae_gate_input(in, parse_enum<GateInput>(policy, "policy"), w, DType::f64);
  };
  const MaeGateInput full = run("full_mean", 0);
  CHECK_FALSE(full.per_position);
  CHECK(full.u.val().to_vector<double>() == std::vector<double>{2.5, 15});  // padding skipped
  const MaeGateInput prefix = run("causal_prefix_mean", 0);
  CHECK(prefix.per_position);
  CHECK(prefix.u.val().to_vector<double>() == std::vector<double>{1, 1.5, 2, 2.5, 10, 15, 20, 25});
  CHECK(run("causal_window_mean", 2).u.val().to_vector<double>() ==
        std::vector<double>{1, 1.5, 2.5, 3.5, 10, 15, 25, 35});
  CHECK(run("causal_window_mean", 1).u.val().to_vector<double>() == std::vector<double>{1, 2, 3, 4, 10, 20, 30, 40});
  in.source_mean = g.input(Tensor::from_vector(std::vector<double>{7, 8}, Shape{2, 1}));
  CHECK(run("source_mean", 0).u.val().to_vector<double>() == std::vector<double>{7, 8});
  CHECK(sequence_mean(x, Tensor()).val().to_vector<double>() == std::vector<double>{2.5, 25});
  CHECK_THROWS_WITH(sequence_mean(x, u8({1, 1, 1}, 1, 3)), Catch::Contains("[1,3]") && Catch::Contains("[2,4,1]"));
}

TEST_CASE("mae: causal gate inputs leak nothing from later positions", "[layers][mae][causal]") {
  const Tensor a = test::random_tensor(Shape{2, 6, D}, 31);
  std::vector<double> bv = a.to_vector<double>();
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 3 * D; i < 6 * D; ++i) bv[static_cast<size_t>(r * 6 * D + i)] += 1.5;  // positions 3..5 change
  const Tensor b = Tensor::from_vector(bv, a.shape());
  for (const std::string policy : {"causal_prefix_mean", "causal_window_mean", "full_mean"}) {
    INFO(policy);
    const MaeOptions o = mae_opts("{type: mae, gate_window: 2, gate_input: {lm_self: " + policy + "}}");
    ParameterStore store(Device::cpu(), 4);
    auto out = [&](const Tensor& x) {
      Graph g(Device::cpu(), &store, test::f64_graph(false));
      return mae_attention_layer(Builder(g, "s"), test::self_input(g.input(x), true), D, o, SiteRole::lm_self)
          .val()
          .to_vector<double>();
    };
    const auto oa = out(a), ob = out(b);
    double early = 0, late = 0;
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t i = 0; i < 6 * D; ++i)
        (i < 3 * D ? early : late) =
            std::max(i < 3 * D ? early : late, std::abs(oa[r * 6 * D + i] - ob[r * 6 * D + i]));
    CHECK(late > 1e-6);
    if (policy == "full_mean")
      CHECK(early > 1e-9);  // the paper's whole-sequence mean sees the future
    else
      CHECK(early < 1e-12);
  }
}

TEST_CASE("mae: layer steps with gate state equal full recomputation", "[layers][mae][incremental]") {
  const Tensor x = test::random_tensor(Shape{2, 5, D}, 32);
  for (const auto& [policy, window] : std::vector<std::pair<std::string, int>>{
           {"causal_prefix_mean", 100}, {"causal_window_mean", 2}, {"causal_window_mean", 3}, {"full_mean", 100}}) {
    INFO(policy << " W " << window);
    const std::string yaml = "{type: mae, gate_window: " + std::to_string(window) + ", gate_input: {lm_self: ";
    const MaeOptions o = mae_opts(yaml + policy + "}}");
    // full_mean while decoding reads the prefix: compare it with the prefix policy's full pass.
    const MaeOptions full_o = mae_opts(yaml + (policy == "full_mean" ? "causal_prefix_mean" : policy) + "}}");
    ParameterStore store(Device::cpu(), 5);
    Graph g(Device::cpu(), &store, test::f64_graph(false));
    const Builder b(g, "s");
    Expr xe = g.input(x);
    const auto full =
        mae_attention_layer(b, test::self_input(xe, true), D, full_o, SiteRole::lm_self).val().to_vector<double>();
    KVCache cache;
    std::vector<double> steps(full.size());
    // Chunks of 2, 1 and 2 positions (prompt priming, then steps).
    for (const auto& [begin, len] : std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 1}, {3, 2}}) {
      Expr xc = slice(xe, 1, begin, len);
      const auto got = mae_attention_layer(b, test::self_input(xc, true, {}, &cache), D, o, SiteRole::lm_self).val();
      const auto v = got.to_vector<double>();
      for (int64_t r = 0; r < 2; ++r)
        std::copy(v.begin() + r * len * D, v.begin() + (r + 1) * len * D, steps.begin() + (r * 5 + begin) * D);
    }
    CHECK(test::max_abs_diff(steps, full) < 1e-12);
    CHECK(cache.positions == 5);
    CHECK(cache.rows.size() == 1);
  }
}

TEST_CASE("mae: Transformer incremental decoding equals full recomputation", "[layers][mae][transformer]") {
  const Tensor src = ids({5, 6, 7, 3, 8, 9, 3, 0}, 2, 4), mask = u8({1, 1, 1, 1, 1, 1, 1, 0}, 2, 4);
  const Tensor tgt = ids({2, 4, 5, 6, 2, 7, 8, 9}, 2, 4);
  for (const std::string att :
       {"{type: mae, gate_input: leak_free}", "{type: mae, name: MAE-2, gate_input: leak_free}",
        "{type: mae, gate_window: 2, gate_input: {decoder_self: causal_window_mean, decoder_cross: source_mean}}",
        "{type: mae, gate: uniform}"}) {
    INFO(att);
    Transformer net(tiny_mt(att));
    ParameterStore store(Device::cpu(), 11);
    const auto [full, steps] = mt_full_and_steps(net, store, src, mask, tgt);
    CHECK(max_diff(full, steps) < 1e-5);
  }
  // The paper's full_mean decoder gates decode with the prefix mean: the steps equal the teacher-forced
  // pass of the prefix policy (same parameters), and differ from the whole-target one.
  ParameterStore store(Device::cpu(), 12);
  const auto [paper_full, paper_steps] =
      mt_full_and_steps(Transformer(tiny_mt("{type: mae, gate_input: paper}")), store, src, mask, tgt);
  const auto [prefix_full, prefix_steps] =
      mt_full_and_steps(Transformer(tiny_mt("{type: mae, gate_input: leak_free}")), store, src, mask, tgt);
  CHECK(max_diff(paper_steps, prefix_full) < 1e-5);
  CHECK(max_diff(paper_steps, paper_full) > 1e-4);
}

TEST_CASE("mae: Transformer decoder gates: leaks, padding and beam reordering", "[layers][mae][transformer]") {
  const Tensor src = ids({5, 6, 7, 3, 8, 9, 3, 0}, 2, 4), mask = u8({1, 1, 1, 1, 1, 1, 1, 0}, 2, 4);
  ParameterStore store(Device::cpu(), 13);
  auto logits = [&](const std::string& att, const Tensor& s, const Tensor& m, const Tensor& tgt) {
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g);
    Transformer net(tiny_mt(att));
    return net.decode(b, net.encode(b, s, m), m, tgt).val().to_vector<float>();
  };
  // A different third target token: earlier positions see it only through full_mean gates.
  const Tensor t1 = ids({2, 4, 5, 6}, 1, 4), t2 = ids({2, 4, 9, 6}, 1, 4);
  const Tensor s1 = ids({5, 6, 7, 3}, 1, 4), m1 = u8({1, 1, 1, 1}, 1, 4);
  CHECK(max_diff(logits("{type: mae, gate_input: leak_free}", s1, m1, t1),
                 logits("{type: mae, gate_input: leak_free}", s1, m1, t2), 0, 24) < 1e-6);
  CHECK(max_diff(logits("{type: mae, gate_input: paper}", s1, m1, t1),
                 logits("{type: mae, gate_input: paper}", s1, m1, t2), 0, 24) > 1e-6);
  // Padding enters no gate: padded source and target rows give the unpadded logits.
  for (const std::string att : {"{type: mae, gate_input: paper}", "{type: mae}"}) {
    INFO(att);
    const auto padded = logits(att, ids({5, 6, 7, 0}, 1, 4), u8({1, 1, 1, 0}, 1, 4), ids({2, 4, 5, 0}, 1, 4));
    const auto plain = logits(att, ids({5, 6, 7}, 1, 3), u8({1, 1, 1}, 1, 3), ids({2, 4, 5}, 1, 3));
    CHECK(max_diff(padded, plain, 0, 36) < 1e-5);
  }
  // Reordering hypotheses reorders the gate state (prefix sums) with the caches.
  for (const std::string att :
       {"{type: mae, gate_input: leak_free}",
        "{type: mae, gate_input: {decoder_self: causal_window_mean, decoder_cross: source_mean}, "
        "gate_window: 2}"}) {
    Transformer net(tiny_mt(att));
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g);
    auto st = net.start(b, src, mask);
    net.step(b, *st, Tensor::from_vector(std::vector<int32_t>{2, 2}, Shape{2}));
    net.step(b, *st, Tensor::from_vector(std::vector<int32_t>{4, 7}, Shape{2}));
    st->reorder(b, Tensor::from_vector(std::vector<int32_t>{1, 1, 0}, Shape{3}));
    const auto v =
        net.step(b, *st, Tensor::from_vector(std::vector<int32_t>{5, 5, 5}, Shape{3})).val().to_vector<float>();
    CHECK(max_diff(std::vector<float>(v.begin(), v.begin() + 12), std::vector<float>(v.begin() + 12, v.begin() + 24)) <
          1e-6);
    CHECK(max_diff(std::vector<float>(v.begin(), v.begin() + 12), std::vector<float>(v.begin() + 24, v.end())) > 1e-6);
  }
}

TEST_CASE("mae: UNI-MAE inference is the plain Transformer", "[layers][mae][transformer]") {
  const Tensor src = ids({5, 6, 7, 3, 8, 9, 3, 0}, 2, 4), mask = u8({1, 1, 1, 1, 1, 1, 1, 0}, 2, 4);
  const Tensor tgt = ids({2, 4, 5, 6, 2, 7, 8, 9}, 2, 4);
  ParameterStore store(Device::cpu(), 14);
  auto logits = [&](const std::string& att) {
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g);
    Transformer net(tiny_mt(att));
    return net.decode(b, net.encode(b, src, mask), mask, tgt).val().to_vector<float>();
  };
  CHECK(logits("{type: mae, name: UNI-MAE-3}") == logits("{type: mha}"));
}

TEST_CASE("mae: Transformer F and G training steps, gates and the recorder", "[layers][mae][transformer]") {
  TransformerModel model(tiny_mt("{type: mae, gate_input: leak_free}"));
  ParameterStore store(Device::cpu(), 15);
  const std::vector<int32_t> s1 = {4, 5, 6}, s2 = {7, 8}, y1 = {7, 8}, y2 = {9, 4, 5};
  const data::Batch batch =
      data::make_batch({std::span<const int32_t>(s1), std::span<const int32_t>(s2)},
                       {std::span<const int32_t>(y1), std::span<const int32_t>(y2)}, {0, 1}, 0, 2, 3);
  auto gate_grad = [&](ExpertChoice experts) {
    store.zero_grads();
    Graph g(Device::cpu(), &store, GraphOptions{.training = true, .seed = 3, .step = 7});
    Builder b(g);
    b.context().experts = experts;
    Expr loss = model.loss(b, batch, 0.1f);
    g.backward(loss);
    CHECK(std::isfinite(loss.val().item()));
    double gate = 0, rest = 0;
    for (const ParamEntry& e : store.entries())
      for (double v : store.grad(e.name).to_vector<double>()) (e.group == "gate" ? gate : rest) += v * v;
    CHECK(rest > 0);
    return gate;
  };
  CHECK(gate_grad(ExpertChoice::sample) == 0.0);  // F passes
  CHECK(gate_grad(ExpertChoice::mixture) > 0.0);  // G and joint passes
  int gates = 0, states = 0;
  for (const ParamEntry& e : store.entries()) {
    gates += e.name.ends_with(".gate.l1.w") && e.group == "gate";
    states += e.state;
  }
  CHECK(gates == 6);    // 2 encoder self + 2 decoder self + 2 cross-attention sites, each with its gate
  CHECK(states == 12);  // each with running mean and variance
  // The recorder: one gate per sentence at full_mean sites, one per position at prefix sites.
  GateRecorder rec;
  {
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g);
    b.context().recorder = &rec;
    const EncoderDecoder& net = *model.encoder_decoder();
    net.decode(b, net.encode(b, batch.src, batch.src_mask), batch.src_mask, batch.tgt_in, batch.tgt_mask);
  }
  REQUIRE(rec.records().size() == 6);
  const GateRecord& enc = rec.records().at("encoder.l0.self_attn").at(0);
  CHECK(enc.probs.shape() == Shape({2, 4}));
  CHECK(enc.policy == "full_mean");
  const GateRecord& dec = rec.records().at("decoder.l1.cross_attn").at(0);
  CHECK(dec.probs.shape() == Shape({2, batch.tgt_in.shape()[1], 4}));
  CHECK(dec.query_padding.to_vector<uint8_t>() == batch.tgt_mask.to_vector<uint8_t>());
  const auto p = dec.probs.to_vector<double>();
  for (size_t r = 0; r < p.size(); r += 4) CHECK(p[r] + p[r + 1] + p[r + 2] + p[r + 3] == Approx(1.0).epsilon(1e-6));
  // The running statistics are checkpointed with the parameters.
  const std::string path = (std::filesystem::temp_directory_path() / "moe_mae_checkpoint.safetensors").string();
  save_checkpoint(path, model, store, {});
  LoadedCheckpoint loaded = load_checkpoint(path, Device::cpu());
  const std::string stat = "decoder.l0.self_attn.gate.bn.mean";
  CHECK(loaded.params->value(stat).to_vector<float>() == store.value(stat).to_vector<float>());
  CHECK(store.value(stat).to_vector<float>() != std::vector<float>(16, 0.f));  // training moved them
  std::filesystem::remove(path);
}

TEST_CASE("mae: LM incremental decoding, causality and padding", "[layers][mae][lm]") {
  for (const std::string att : {"{type: mae, gate_window: 2}", "{type: mae, gate_input: {lm_self: causal_prefix_mean}}",
                                "{type: mae, name: MAE-2}"}) {
    INFO(att);
    TransformerLm lm(tiny_lm(att));
    ParameterStore store(Device::cpu(), 9);
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g);
    const std::vector<int32_t> seq = {2, 5, 9, 1, 2, 8, 11, 4};  // two rows of four
    std::vector<int32_t> read = seq;  // what the steps read: </s> for the search's first <s> (models/decoder.h)
    read[0] = read[4] = 3;
    const auto full = lm.log_probs(b, ids(read, 2, 4)).val().to_vector<float>();
    std::vector<float> steps(full.size());
    auto st = lm.start(b);
    for (int64_t t = 0; t < 4; ++t) {
      const auto got = lm.step(b, *st, step_ids(ids(seq, 2, 4), t)).val().to_vector<float>();
      std::copy(got.begin(), got.begin() + 12, steps.begin() + t * 12);
      std::copy(got.begin() + 12, got.end(), steps.begin() + (4 + t) * 12);
    }
    CHECK(max_diff(steps, full) < 1e-5);
    st->reorder(b, Tensor::from_vector(std::vector<int32_t>{1, 1}, Shape{2}));
    const auto after =
        lm.step(b, *st, Tensor::from_vector(std::vector<int32_t>{3, 3}, Shape{2})).val().to_vector<float>();
    for (int v = 0; v < 12; ++v) CHECK(after[v] == Approx(after[12 + v]).margin(1e-6));
    // A later token does not change earlier predictions.
    const auto other = lm.log_probs(b, ids({3, 5, 9, 7}, 1, 4)).val().to_vector<float>();
    CHECK(max_diff(other, full, 0, 36) < 1e-6);
  }
  // full_mean LM gates average the real tokens only.
  TransformerLm lm(tiny_lm("{type: mae, gate_input: {lm_self: full_mean}}"));
  ParameterStore store(Device::cpu(), 9);
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  const auto padded = lm.log_probs(b, ids({4, 7, 1, 0, 0}, 1, 5)).val().to_vector<float>();
  const auto plain = lm.log_probs(b, ids({4, 7, 1}, 1, 3)).val().to_vector<float>();
  CHECK(max_diff(padded, plain, 0, 36) < 1e-6);
}
