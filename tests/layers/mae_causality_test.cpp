// Issue 16: training, scoring and decoding see the same MAE gates, and no gate sees the future.
// Per variant (MAE-3, MAE-2, UNI-MAE-3, NOBCD-3; h = 4) with the default gate inputs, at the decoder
// sites of a Transformer and the sites of a Transformer LM, in mixture and argmax inference:
//  - the teacher-forced log-probability of every target prefix, read from one pass over the whole
//    target as validation and moe-score compute it (Model::loss / lm_loss give the same sums), equals
//    the sum of the incremental decoder's step log-probabilities for that prefix, to f32 tolerance;
//  - changing a later target token changes no earlier prediction (nor any other sentence's).
// The controls show the checks can fail: full_mean decoder gates (gate_input paper; lm_self full_mean
// for the LM) break both, except where no gate reads the target (UNI-MAE). The gates' output layers
// are scaled up so that what a gate sees matters. Also: the gate inputs pinned into a stored
// architecture, and Model::future_sites / future_warning (moe-train's and moe-score's warning).
// Eval mode throughout: in training mode the gates' BatchNorm normalises with statistics over all
// positions of the batch, which couples positions by design; that is not the gate input of issue 16.
#include <algorithm>
#include <catch2/catch.hpp>

#include "graph/expr/softmax.h"
#include "mae_test_util.h"
#include "models/model_registry.h"
#include "models/transformer.h"
#include "models/transformer_lm.h"
#include "models/transformer_model.h"

using namespace moe;
using test::ids;
using test::step_ids;

namespace {
using Flags = ExpertChoice;
constexpr int64_t V = 12;            // vocabulary of tiny_mt / tiny_lm
constexpr double kSameSum = 1e-4;    // f32: teacher-forced vs incremental prefix log-probabilities
constexpr double kUnchanged = 1e-6;  // f32: a prediction that must not move
constexpr double kLeak = 1e-3;       // the controls' leaks are larger than this

const std::vector<std::string> kVariants = {"MAE-3", "MAE-2", "UNI-MAE-3", "NOBCD-3"};
const std::vector<Flags> kInference = {ExpertChoice::mixture, ExpertChoice::argmax};

/// Multiplies every gate's output weights (*.gate.l2.w) by 20: confident gates that depend on their input.
void sharpen_gates(ParameterStore& store) {
  for (const ParamEntry& e : store.entries()) {
    if (!e.name.ends_with(".gate.l2.w")) continue;
    std::vector<double> v = test::values(store, e.name);
    for (double& x : v) x *= 20;
    test::set_values(store, e.name, v);
  }
}

/// What the checks measure: the largest |teacher-forced - incremental| prefix log-probability, the
/// largest change of a prediction before a changed target token, and the smallest largest change
/// after it (that the change is seen at all).
struct Causality {
  double prefix_gap = 0, before = 0, after = 1e30;
};

/// Largest |a - b| over rows [begin, end) of [*, V] log-probability tables.
double rows_diff(const std::vector<float>& a, const std::vector<float>& b, int64_t begin, int64_t end) {
  double worst = 0;
  for (int64_t i = begin * V; i < end * V; ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
  return worst;
}

// ---- Translation: decoder sites ----

const std::vector<std::vector<int32_t>> kSrc = {{5, 6, 7, 8}, {9, 10}};
const std::vector<std::vector<int32_t>> kTgt = {{4, 5, 6, 7, 8}, {9, 10, 11}};

data::Batch mt_batch(const std::vector<std::vector<int32_t>>& tgt) {
  std::vector<std::span<const int32_t>> s, t;
  for (size_t i = 0; i < kSrc.size(); ++i) {
    s.emplace_back(kSrc[i]);
    t.emplace_back(tgt[i]);
  }
  return data::make_batch(s, t, {0, 1}, 0, 2, 3);
}

/// Teacher-forced log-probabilities [B * T, V] over the whole targets, as training and scoring build them.
std::vector<float> mt_teacher_forced(const EncoderDecoder& net, ParameterStore& store, const data::Batch& batch,
                                     const Flags& flags) {
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  b.context().experts = flags;
  Expr memory = net.encode(b, batch.src, batch.src_mask);
  return log_softmax(net.decode(b, memory, batch.src_mask, batch.tgt_in, batch.tgt_mask)).val().to_vector<float>();
}

/// Incremental decoding of the same targets (the translator's steps): log-probabilities [B * T, V].
std::vector<float> mt_incremental(const EncoderDecoder& net, ParameterStore& store, const data::Batch& batch,
                                  const Flags& flags) {
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  b.context().experts = flags;
  const int64_t rows = batch.tgt_in.shape()[0], len = batch.tgt_in.shape()[1];
  std::vector<float> out(static_cast<size_t>(rows * len * V));
  auto state = net.start(b, batch.src, batch.src_mask);
  for (int64_t t = 0; t < len; ++t) {
    const auto lp = net.step(b, *state, step_ids(batch.tgt_in, t)).val().to_vector<float>();
    for (int64_t r = 0; r < rows; ++r) std::copy_n(lp.begin() + r * V, V, out.begin() + (r * len + t) * V);
  }
  return out;
}

/// Sum over the first k target tokens of row r of the log-probabilities `lp` [B * T, V] give them.
double prefix_log_prob(const std::vector<float>& lp, const data::Batch& batch, int64_t r, int64_t k) {
  const int64_t len = batch.tgt_out.shape()[1];
  const auto out = batch.tgt_out.to_vector<int32_t>();
  double sum = 0;
  for (int64_t t = 0; t < k; ++t) sum += lp[static_cast<size_t>((r * len + t) * V + out[r * len + t])];
  return sum;
}

Causality mt_causality(const TransformerModel& model, ParameterStore& store, const Flags& flags) {
  const EncoderDecoder& net = *model.encoder_decoder();
  const data::Batch batch = mt_batch(kTgt);
  const auto full = mt_teacher_forced(net, store, batch, flags);
  const auto steps = mt_incremental(net, store, batch, flags);
  Causality c;
  double all_steps = 0;
  for (int64_t r = 0; r < batch.size(); ++r) {
    for (int64_t k = 1; k <= batch.tgt_lengths[r]; ++k)  // every prefix, </s> included
      c.prefix_gap =
          std::max(c.prefix_gap, std::abs(prefix_log_prob(full, batch, r, k) - prefix_log_prob(steps, batch, r, k)));
    all_steps += prefix_log_prob(steps, batch, r, batch.tgt_lengths[r]);
  }
  {  // The training / validation loss of the batch is the same teacher-forced sum.
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g);
    b.context().experts = flags;
    c.prefix_gap = std::max(c.prefix_gap, std::abs(-model.loss(b, batch, 0.f).val().item() - all_steps));
  }
  // Target token j of row r changes: predictions at positions < j (the decoder inputs <s> y_1..y_j-1)
  // and the other row stay; the prediction at j (it reads the new token) moves.
  const int64_t len = batch.tgt_in.shape()[1];
  for (size_t r = 0; r < kTgt.size(); ++r)
    for (size_t j = 0; j < kTgt[r].size(); ++j) {
      auto tgt = kTgt;
      tgt[r][j] = tgt[r][j] == 11 ? 4 : tgt[r][j] + 1;
      const auto other = mt_teacher_forced(net, store, mt_batch(tgt), flags);
      const int64_t row = static_cast<int64_t>(r) * len, pos = static_cast<int64_t>(j) + 1;
      c.before = std::max(c.before, rows_diff(full, other, row, row + pos));
      const int64_t o = (1 - static_cast<int64_t>(r)) * len;
      c.before = std::max(c.before, rows_diff(full, other, o, o + len));
      c.after = std::min(c.after, rows_diff(full, other, row + pos, row + pos + 1));
    }
  return c;
}

// ---- Language models: lm_self sites ----

// Rows x_0..x_6: inputs x_0..x_5, targets x_1..x_6.
const std::vector<std::vector<int32_t>> kText = {{3, 5, 9, 1, 7, 8, 4}, {3, 8, 11, 4, 6, 10, 5}};
constexpr int64_t kLmLen = 6;

Tensor lm_input(const std::vector<std::vector<int32_t>>& text) {
  std::vector<int32_t> v;
  for (const auto& row : text) v.insert(v.end(), row.begin(), row.begin() + kLmLen);
  return ids(v, static_cast<int64_t>(text.size()), kLmLen);
}

std::vector<float> lm_teacher_forced(const TransformerLm& lm, ParameterStore& store,
                                     const std::vector<std::vector<int32_t>>& text, const Flags& flags) {
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  b.context().experts = flags;
  return lm.log_probs(b, lm_input(text)).val().to_vector<float>();
}

/// The validation / moe-score ppl loss of the first k targets of every row, over the whole rows.
double lm_prefix_loss(const TransformerLm& lm, ParameterStore& store, int64_t k, const Flags& flags) {
  std::vector<std::vector<int32_t>> in, tg;
  std::vector<std::vector<float>> mask;
  for (const auto& row : kText) {
    in.emplace_back(row.begin(), row.begin() + kLmLen);
    tg.emplace_back(row.begin() + 1, row.end());
    mask.emplace_back(static_cast<size_t>(kLmLen), 0.f);
    std::fill_n(mask.back().begin(), k, 1.f);
  }
  Graph g(Device::cpu(), &store, GraphOptions{.training = false});
  Builder b(g);
  b.context().experts = flags;
  return lm.lm_loss(b, data::make_lm_batch(in, tg, mask, {0, 1}, 0), 0.f).val().item();
}

Causality lm_causality(const TransformerLm& lm, ParameterStore& store, const Flags& flags) {
  const int64_t rows = static_cast<int64_t>(kText.size());
  const auto full = lm_teacher_forced(lm, store, kText, flags);
  std::vector<double> step_lp(static_cast<size_t>(rows * kLmLen));  // log p(x_t+1 | x_0..x_t)
  {
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    Builder b(g);
    b.context().experts = flags;
    auto state = lm.start(b);
    const Tensor input = lm_input(kText);
    for (int64_t t = 0; t < kLmLen; ++t) {
      const auto lp = lm.step(b, *state, step_ids(input, t)).val().to_vector<float>();
      for (int64_t r = 0; r < rows; ++r) step_lp[r * kLmLen + t] = lp[r * V + kText[r][t + 1]];
    }
  }
  Causality c;
  for (int64_t k = 1; k <= kLmLen; ++k) {
    double steps = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double tf = 0, inc = 0;
      for (int64_t t = 0; t < k; ++t) {
        tf += full[static_cast<size_t>((r * kLmLen + t) * V + kText[r][t + 1])];
        inc += step_lp[r * kLmLen + t];
      }
      c.prefix_gap = std::max(c.prefix_gap, std::abs(tf - inc));
      steps += inc;
    }
    c.prefix_gap = std::max(c.prefix_gap, std::abs(-lm_prefix_loss(lm, store, k, flags) - steps));
  }
  // Token x_j of row r changes (j >= 1: a target and a later input).
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 1; j < kLmLen; ++j) {
      auto text = kText;
      int32_t& x = text[r][j];
      x = x == 11 ? 4 : x + 1;
      const auto other = lm_teacher_forced(lm, store, text, flags);
      const int64_t row = r * kLmLen, o = (1 - r) * kLmLen;
      c.before = std::max({c.before, rows_diff(full, other, row, row + j), rows_diff(full, other, o, o + kLmLen)});
      c.after = std::min(c.after, rows_diff(full, other, row + j, row + j + 1));
    }
  return c;
}

void check_causal(const Causality& c) {
  CHECK(c.prefix_gap < kSameSum);
  CHECK(c.before < kUnchanged);
  CHECK(c.after > kLeak);  // the changed token is seen where it may be
}

void check_leaks(const Causality& c) {
  CHECK(c.prefix_gap > kLeak);
  CHECK(c.before > kLeak);
}
}  // namespace

TEST_CASE("mae causality: translation decoders score their prefixes as they decode them", "[layers][mae][causal]") {
  for (const std::string& name : kVariants)
    for (const Flags& flags : kInference) {
      INFO(name << " " << enum_name(flags));
      const TransformerModel model(test::tiny_mt("{type: mae, name: " + name + "}"));
      ParameterStore store(Device::cpu(), 21);
      const Causality warm = mt_causality(model, store, flags);  // declares the parameters
      sharpen_gates(store);
      const Causality c = mt_causality(model, store, flags);
      INFO("prefix gap " << c.prefix_gap << ", before " << c.before << ", after " << c.after);
      check_causal(warm);
      check_causal(c);
      // The control: the paper's whole-target decoder gates (same parameters) leak, unless there is no gate.
      const TransformerModel paper(test::tiny_mt("{type: mae, name: " + name + ", gate_input: paper}"));
      const Causality p = mt_causality(paper, store, flags);
      INFO("paper: prefix gap " << p.prefix_gap << ", before " << p.before);
      if (name.starts_with("UNI-"))
        check_causal(p);
      else
        check_leaks(p);
    }
}

TEST_CASE("mae causality: language models score their prefixes as they decode them", "[layers][mae][causal]") {
  std::vector<std::string> atts;
  for (const std::string& name : kVariants) atts.push_back("{type: mae, name: " + name + "}");
  atts.push_back("{type: mae, name: MAE-3, gate_window: 2}");     // the window slides within the rows
  atts.push_back("{type: mae, name: MAE-3, gate_input: paper}");  // LM sites read the window in the paper too
  for (const std::string& att : atts)
    for (const Flags& flags : kInference) {
      INFO(att << " " << enum_name(flags));
      const TransformerLm lm(test::tiny_lm(att));
      ParameterStore store(Device::cpu(), 22);
      const Causality warm = lm_causality(lm, store, flags);
      sharpen_gates(store);
      const Causality c = lm_causality(lm, store, flags);
      INFO("prefix gap " << c.prefix_gap << ", before " << c.before << ", after " << c.after);
      check_causal(warm);
      check_causal(c);
    }
  // The control: a whole-row mean at the LM sites leaks.
  const TransformerLm lm(test::tiny_lm("{type: mae, name: MAE-3, gate_input: {lm_self: full_mean}}"));
  ParameterStore store(Device::cpu(), 22);
  lm_causality(lm, store, {});
  sharpen_gates(store);
  const Causality p = lm_causality(lm, store, {});
  INFO("full_mean: prefix gap " << p.prefix_gap << ", before " << p.before);
  check_leaks(p);
}

TEST_CASE("mae causality: stored architectures name their gate inputs", "[layers][mae][causal]") {
  auto stored = [](const std::string& att) { return test::tiny_mt(att).to_yaml()["attention"]; };
  CHECK(stored("{type: mae}")["gate_input"].as<std::string>() == "leak_free");
  CHECK(stored("{type: mae, gate_input: paper}")["gate_input"].as<std::string>() == "paper");
  const YAML::Node partial = stored("{type: mae, gate_input: {decoder_cross: source_mean}}")["gate_input"];
  CHECK(partial.size() == 4);
  CHECK(partial["decoder_cross"].as<std::string>() == "source_mean");
  CHECK(partial["decoder_self"].as<std::string>() == "causal_prefix_mean");
  CHECK(partial["encoder_self"].as<std::string>() == "full_mean");
  CHECK(!stored("{type: moa}")["gate_input"]);
  CHECK(test::tiny_lm("{type: mae}").to_yaml()["attention"]["gate_input"].as<std::string>() == "leak_free");
  // Read back, a stored architecture is the same model (what --resume compares).
  const YAML::Node once = test::tiny_mt("{type: mae, gate_input: {decoder_self: full_mean}}").to_yaml();
  CHECK(YAML::Dump(TransformerConfig::from_yaml(once).to_yaml()) == YAML::Dump(once));
}

TEST_CASE("mae causality: which gates see the future, and the warning", "[layers][mae][causal]") {
  auto model = [](const std::string& yaml) {
    YAML::Node n = YAML::Load(yaml);
    n["vocab"] = 12;  // language models need their vocabulary size
    if (model_type_of(n) == "transformer") n.remove("vocab");
    return create_model(n);
  };
  auto roles = [&](const std::string& yaml) { return model(yaml)->future_sites(); };
  using R = std::vector<std::string>;
  const std::string mt = "{type: transformer, heads: 4, d_model: 16, attention: ";
  CHECK(roles(mt + "{type: mae}}").empty());
  CHECK(roles(mt + "{type: mae, name: NOBCD-3, gate_input: leak_free}}").empty());
  CHECK(roles(mt + "{type: mae, gate_input: paper}}") == R{"decoder_self", "decoder_cross"});
  CHECK(roles(mt + "{type: mae, name: NOBCD-2, gate_input: paper}}") == R{"decoder_self", "decoder_cross"});
  CHECK(roles(mt + "{type: mae, gate_input: {decoder_cross: full_mean}}}") == R{"decoder_cross"});
  CHECK(roles(mt + "{type: mae, name: UNI-MAE-3, gate_input: paper}}").empty());  // no gate, nothing seen
  CHECK(roles(mt + "{type: moa}}").empty());
  CHECK(roles("{type: transformer}").empty());
  const std::string lm = "{type: transformer_lm, heads: 4, d_model: 16, attention: ";
  CHECK(roles(lm + "{type: mae, gate_input: paper}}").empty());  // LM sites: the causal window
  CHECK(roles(lm + "{type: mae, gate_input: {lm_self: full_mean}}}") == R{"lm_self"});
  CHECK(roles("{type: transformer_mlm, heads: 4, d_model: 16, attention: {type: mae, gate_input: {encoder_self: "
              "full_mean}}}")
            .empty());  // bidirectional: no future to see
  CHECK(roles("{type: lstm_lm}").empty());
  const std::string w = future_warning(*model(mt + "{type: mae, gate_input: paper}}"), "these scores");
  CHECK_THAT(w, Catch::Contains("decoder_self, decoder_cross") && Catch::Contains("these scores see future target") &&
                    Catch::Contains("leak_free"));
  CHECK(future_warning(*model(mt + "{type: mae}}"), "these scores").empty());
  CHECK_THROWS_WITH(roles(mt + "{type: mae, gate_input: future}}"), Catch::Contains("'future'"));
}
