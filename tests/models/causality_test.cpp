// Causality of every left-to-right model family (issue 14), with the probe of tests/support/causality.h:
// changing token t of one row of a 3-row batch leaves the outputs (log-probabilities, or decoder
// logits) and the per-position training-loss terms before t unchanged, and every other row too, in
// training mode (dropout 0; MoE gate noise on, same seed) and in inference mode. Families: Transformer
// LM (plain, adaptive input/softmax, attention dropout on in training: its masks stay causal), MAE (every
// gate norm that is causal; G, F and joint steps), MoA, MoE FFN (flat and hierarchical noisy top-k), LSTM
// LM (plain and with the 1B-word MoE layer, flat and hierarchical), the decoder of the translation
// Transformer with each of them, and the decoder of the LSTM encoder-decoder (lstm_seq2seq with noisy
// top-k MoE layers; batchwise: see below).
// Controls, which show the probe can fail: MAE gates with gate_norm batch (the paper's BatchNorm)
// leak in training, and the strictly balanced batchwise MoE gate couples the batch in training
// (by design, docs/MODELS.md §3.10: it ranks rows per expert over the batch); both are causal in inference.
// The MoE routers after 2017 (Switch, shared experts, moe_every, a token capacity; loss-free balancing):
// what the probe expects is read from the models' routed sites (Model::routed_sites: each site's
// RoutingScope in training and inference), never from option names: a capacity (scope `earlier`) keeps
// every earlier position as it was but lets one row move another's routing; a router that sees later
// tokens (batchwise, expert choice) is refused by decoder-only LMs with an error naming the key, and
// expert choice by translation decoders; translation encoders and masked LMs take it.
#include "support/causality.h"

#include <catch2/catch.hpp>

#include "models/lstm_lm.h"
#include "models/lstm_seq2seq.h"
#include "models/transformer_lm.h"
#include "models/transformer_model.h"

using namespace moe;
using test::CausalProbe;
using test::CausalReport;

namespace {
constexpr double kUnchanged = 1e-6;  // f32: an output or loss term that must not move
constexpr double kSeen = 1e-4;       // the changed position must move by more than this
constexpr double kLeak = 1e-4;       // the controls' leaks are larger than this

// 3 rows of 7 tokens (ids 4..11; 0-3 are pad/unk/bos/eos): inputs x_0..x_5, targets x_1..x_6.
const test::Rows kRows = {{4, 7, 5, 9, 11, 6, 8}, {5, 10, 4, 4, 8, 9, 7}, {11, 6, 9, 5, 7, 10, 4}};
const std::vector<int64_t> kPositions = {1, 3, 5};
int32_t next_token(int32_t x) { return x == 11 ? 4 : x + 1; }

const std::string kLmBase = "{vocab: 12, d_model: 16, ffn_dim: 32, heads: 4, layers: 2, dropout: 0, max_positions: 32";

template <class Lm>
CausalProbe lm_probe(const Lm& lm, ExpertChoice experts = ExpertChoice::mixture) {
  return CausalProbe{[&lm](const Builder& b, const Tensor& in) { return lm.log_probs(b, in); },
                     [&lm](const Builder& b, const Tensor& in, const Tensor& tg, const Tensor& mask) {
                       return lm.loss(b, in, tg, mask, 0.f);
                     },
                     experts};
}

/// The decoder of a translation model (encoder on a fixed source): outputs = logits [B * T, V], loss =
/// the model's training loss (Model::loss) with unselected targets set to the pad id it ignores.
CausalProbe mt_probe(const Model& model, ExpertChoice experts = ExpertChoice::mixture) {
  static const Tensor src =
                          Tensor::from_vector(std::vector<int32_t>{5, 6, 7, 3, 8, 9, 10, 3, 4, 11, 3, 0}, Shape{3, 4}),
                      src_mask =
                          Tensor::from_vector(std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, Shape{3, 4});
  auto ones = [](const Tensor& in) {
    return Tensor::from_vector(std::vector<uint8_t>(static_cast<size_t>(in.numel()), 1), in.shape());
  };
  const EncoderDecoder& net = *model.encoder_decoder();
  return CausalProbe{[&net, ones](const Builder& b, const Tensor& in) {
                       return net.decode(b, net.encode(b, src, src_mask), src_mask, in, ones(in));
                     },
                     [&model, &net, ones](const Builder& b, const Tensor& in, const Tensor& tg, const Tensor& mask) {
                       auto t = tg.to_vector<int32_t>();
                       const auto m = mask.to_vector<float>();
                       for (size_t i = 0; i < t.size(); ++i)
                         if (m[i] == 0.f) t[i] = net.spec().pad_id;
                       data::Batch batch;
                       batch.src = src;
                       batch.src_mask = src_mask;
                       batch.tgt_in = in;
                       batch.tgt_out = Tensor::from_vector(t, tg.shape());
                       batch.tgt_mask = ones(in);
                       return model.loss(b, batch, 0.f);
                     },
                     experts};
}

/// Runs the probe in training and inference mode; `leaks_in_training`: the control (a leak expected).
void check(const CausalProbe& probe, ParameterStore& store, bool rows_independent = true,
           bool leaks_in_training = false) {
  for (bool training : {true, false}) {
    const CausalReport r = test::probe_causality(probe, store, kRows, training, kPositions, next_token);
    INFO((training ? "training" : "inference")
         << ": before " << r.before << ", other rows " << r.other_rows << ", at " << r.at);
    CHECK(r.at > kSeen);
    if (training && leaks_in_training) {
      CHECK(std::max(r.before, r.other_rows) > kLeak);
    } else {
      CHECK(r.before < kUnchanged);
      if (rows_independent) CHECK(r.other_rows < kUnchanged);
    }
  }
}

/// The probe with its expectations read from the routed sites' descriptions (routing in the decoder or LM;
/// a translation encoder reads a fixed source here): no later position moves an earlier one unless some
/// scope sees later tokens (then a leak is expected, the control), and rows stay apart unless one couples them.
void check_routed(const CausalProbe& probe, ParameterStore& store, const std::vector<ModelRoutedSite>& sites) {
  for (bool training : {true, false}) {
    bool later = false, rows = false;
    for (const ModelRoutedSite& s : sites) {
      if (s.role == FfnRole::encoder) continue;
      const RoutingScope scope = training ? s.site.training : s.site.inference;
      later = later || sees_later(scope);
      rows = rows || couples_rows(scope);
    }
    const CausalReport r = test::probe_causality(probe, store, kRows, training, kPositions, next_token);
    INFO((training ? "training" : "inference")
         << ": before " << r.before << ", other rows " << r.other_rows << ", at " << r.at);
    CHECK(r.at > kSeen);
    if (later) {
      CHECK(std::max(r.before, r.other_rows) > kLeak);
    } else {
      CHECK(r.before < kUnchanged);
      if (!rows) CHECK(r.other_rows < kUnchanged);
    }
  }
}

void check_lm(const std::string& extra, ExpertChoice experts = ExpertChoice::mixture, bool leaks = false) {
  INFO("transformer_lm " << extra);
  const TransformerLm lm(TransformerLmConfig::from_yaml(YAML::Load(kLmBase + extra + "}")));
  ParameterStore store(Device::cpu(), 11);
  check(lm_probe(lm, experts), store, !leaks, leaks);
}

void check_mt(const std::string& extra, ExpertChoice experts = ExpertChoice::mixture, bool leaks = false) {
  INFO("transformer (decoder) " << extra);
  const TransformerModel net(TransformerConfig::from_yaml(
      YAML::Load("{src_vocab: 12, tgt_vocab: 12, d_model: 16, ffn_dim: 32, heads: 4, enc_layers: 2, dec_layers: 2, "
                 "dropout: 0, max_positions: 32" +
                 extra + "}")));
  ParameterStore store(Device::cpu(), 12);
  check(mt_probe(net, experts), store, !leaks, leaks);
}

const std::string kMoe = ", ffn: {type: moe, experts: 4, k: 2, hidden: 16}";
const std::string kHierMoe = ", ffn: {type: moe, experts: 8, groups: 2, k: 2, k_secondary: 2, hidden: 16}";
const std::string kMoa = ", attention: {type: moa, experts: 4, k: 2, head_dim: 8, dispatch: sparse}";
const std::string kMae = ", attention: {type: mae, name: MAE-3, gate_hidden: 8, gate_dropout: 0";
}  // namespace

TEST_CASE("causality: transformer LMs, plain and adaptive", "[models][causal]") {
  check_lm("");
  check_lm(", attention_dropout: 0.3");  // masks keyed by (row, head, query, key): nothing later moves them
  check_lm(
      ", adaptive_input_cutoffs: [6, 9], adaptive_softmax_cutoffs: [6, 9], adaptive_input_factor: 2, "
      "adaptive_softmax_factor: 2");
}

TEST_CASE("causality: MAE LMs with causal gate norms, and the paper's BatchNorm leaks in training",
          "[models][causal][mae]") {
  for (const std::string norm : {"", ", gate_norm: running", ", gate_norm: none", ", gate_norm: leak_free"})
    for (const ExpertChoice experts : {ExpertChoice::mixture, ExpertChoice::sample})  // inference, G, joint; F
      check_lm(kMae + norm + "}", experts);
  check_lm(kMae + ", name: NOBCD-3}");
  check_lm(kMae + ", gate_norm: batch}", ExpertChoice::mixture, true);  // the control
}

TEST_CASE("causality: MoA and MoE FFN LMs", "[models][causal][moe]") {
  check_lm(kMoa);
  check_lm(kMoa + ", attention_dropout: 0.3");
  check_lm(kMoe);
  check_lm(kHierMoe);
}

TEST_CASE("causality: the routers after 2017 in LMs, as their sites describe them", "[models][causal][moe][router]") {
  for (const std::string ffn :
       {"{type: moe, experts: 4, k: 1, hidden: 16, gating: switch}",
        "{type: moe, experts: 4, k: 2, hidden: 16, gating: switch, normalize: true, z_loss: 0.01}",
        "{type: moe, experts: 8, k: 2, hidden: 8, shared: 1, gating: switch, moe_every: 2}",
        "{type: moe, experts: 4, k: 2, hidden: 16, capacity_factor: 0.5}",
        "{type: moe, experts: 4, k: 1, hidden: 16, gating: switch, capacity_factor: 0.5, eval_capacity_factor: 0.5}"}) {
    INFO("transformer_lm ffn " << ffn);
    const TransformerLm lm(TransformerLmConfig::from_yaml(YAML::Load(kLmBase + ", ffn: " + ffn + "}")));
    REQUIRE(!lm.routed_sites().empty());
    ParameterStore store(Device::cpu(), 11);
    check_routed(lm_probe(lm), store, lm.routed_sites());
  }
  for (const std::string moe : {"{type: moe, experts: 4, k: 1, hidden: 16, gating: switch, capacity_factor: 0.5}",
                                "{type: moe, experts: 8, k: 2, hidden: 8, groups: 2, k_secondary: 2, z_loss: 0.1}"}) {
    INFO("lstm_lm moe " << moe);
    const LstmLm lm(LstmLmConfig::from_yaml(
        YAML::Load("{vocab: 12, embed_dim: 16, hidden: 16, layers: 2, dropout: 0, moe_after: [0], moe: " + moe + "}")));
    ParameterStore store(Device::cpu(), 13);
    check_routed(lm_probe(lm), store, lm.routed_sites());
  }
}

TEST_CASE("causality: decoder-only LMs refuse routers that see later tokens, naming the key",
          "[models][causal][moe][router]") {
  // Batchwise ranks the batch's tokens per expert in training; expert choice a sentence's, always.
  for (const std::string gating : {"batchwise", "expert_choice"}) {
    INFO(gating);
    CHECK_THROWS_WITH(TransformerLm(TransformerLmConfig::from_yaml(YAML::Load(
                          kLmBase + ", ffn: {type: moe, experts: 4, k: 2, hidden: 16, gating: " + gating + "}}"))),
                      Catch::Contains("model.ffn.gating: " + gating) && Catch::Contains("later tokens") &&
                          Catch::Contains("transformer_lm"));
    CHECK_THROWS_WITH(
        LstmLm(LstmLmConfig::from_yaml(YAML::Load(
            "{vocab: 12, embed_dim: 16, hidden: 16, layers: 2, moe_after: [0], moe: {type: moe, gating: " + gating +
            "}}"))),
        Catch::Contains("model.moe.gating: " + gating) && Catch::Contains("lstm_lm"));
  }
  // A masked LM sees the whole block anyway: expert choice is fine there.
  const TransformerLm mlm(
      TransformerLmConfig::from_yaml(YAML::Load("{type: transformer_mlm, vocab: 12, d_model: 16, ffn_dim: 32, heads: "
                                                "4, layers: 2, max_positions: 32, ffn: {type: "
                                                "moe, experts: 4, k: 2, hidden: 16, gating: expert_choice}}")));
  CHECK(mlm.routed_sites().size() == 2);
}

TEST_CASE("causality: LSTM LMs, plain and with MoE layers", "[models][causal][lstm]") {
  for (const std::string extra :
       {"", ", moe_after: [0], moe: {type: moe, experts: 4, k: 2, hidden: 16}",
        ", moe_after: [0], moe: {type: moe, experts: 8, groups: 2, k: 2, k_secondary: 2, hidden: 16}",
        ", adaptive_softmax_cutoffs: [6, 9], adaptive_softmax_factor: 2"}) {
    INFO("lstm_lm " << extra);
    const LstmLm lm(LstmLmConfig::from_yaml(
        YAML::Load("{vocab: 12, embed_dim: 16, hidden: 16, layers: 2, dropout: 0" + extra + "}")));
    ParameterStore store(Device::cpu(), 13);
    check(lm_probe(lm), store);
  }
}

TEST_CASE("causality: translation decoders", "[models][causal][mt]") {
  check_mt("");
  check_mt(", attention_dropout: 0.3");
  check_mt(kMoa);
  check_mt(kMoe);
  check_mt(kHierMoe);
  for (const ExpertChoice experts : {ExpertChoice::mixture, ExpertChoice::sample}) check_mt(kMae + "}", experts);
  check_mt(kMae + ", gate_norm: {decoder_self: none, decoder_cross: none}}");
  check_mt(kMae + ", gate_norm: batch}", ExpertChoice::mixture, true);  // the paper's (and the control)
}

TEST_CASE("causality: translation decoders with the routers after 2017; expert choice in the encoder only",
          "[models][causal][mt][router]") {
  const std::string base =
      "{src_vocab: 12, tgt_vocab: 12, d_model: 16, ffn_dim: 32, heads: 4, enc_layers: 2, dec_layers: 2, dropout: 0, "
      "max_positions: 32, ffn: ";
  for (const std::string ffn :
       {"{type: moe, experts: 4, k: 2, hidden: 16, gating: {encoder: expert_choice, decoder: switch}}",
        "{type: moe, experts: 4, k: 1, hidden: 16, gating: switch, capacity_factor: 0.5}",
        "{type: moe, experts: 8, k: 2, hidden: 8, shared: 1, gating: {encoder: expert_choice, decoder: noisy_topk}}"}) {
    INFO("transformer ffn " << ffn);
    const TransformerModel net(TransformerConfig::from_yaml(YAML::Load(base + ffn + "}")));
    ParameterStore store(Device::cpu(), 12);
    check_routed(mt_probe(net), store, net.routed_sites());
  }
  CHECK_THROWS_WITH(TransformerModel(TransformerConfig::from_yaml(
                        YAML::Load(base + "{type: moe, experts: 4, k: 2, hidden: 16, gating: expert_choice}}"))),
                    Catch::Contains("model.ffn.gating: expert_choice") && Catch::Contains("decoder") &&
                        Catch::Contains("incremental decoding"));
  // The LSTM encoder-decoder: expert choice between encoder LSTMs reads the whole source sentence.
  const LstmSeq2seq lstm(LstmSeq2seqConfig::from_yaml(YAML::Load(
      "{src_vocab: 12, tgt_vocab: 12, d_model: 8, hidden: 8, enc_layers: 2, dropout: 0, moe: {type: moe, experts: 4, "
      "k: 2, hidden: 8, gating: {encoder: expert_choice, decoder: switch}}}")));
  ParameterStore store(Device::cpu(), 14);
  check_routed(mt_probe(lstm), store, lstm.routed_sites());
}

TEST_CASE("causality: the LSTM encoder-decoder's decoder", "[models][causal][mt][seq2seq]") {
  for (const std::string extra : {", attention_function: gnmt, moe: {type: moe, experts: 4, k: 2, hidden: 8}",
                                  ", moe: {type: moe, experts: 4, k: 2, hidden: 8, gating: batchwise}"}) {
    INFO("lstm_seq2seq " << extra);
    const LstmSeq2seq net(LstmSeq2seqConfig::from_yaml(
        YAML::Load("{src_vocab: 12, tgt_vocab: 12, d_model: 8, hidden: 8, enc_layers: 2, dropout: 0" + extra + "}")));
    ParameterStore store(Device::cpu(), 14);
    // Batchwise gating ranks the batch's tokens per expert in training (by design); inference is per token:
    // the decoder's site says so (RoutingScope batch, then token).
    check_routed(mt_probe(net), store, net.routed_sites());
  }
}

TEST_CASE("causality: loss-free balancing routes each token on its own", "[models][causal][moe][router]") {
  // bias_rate 0: the probe runs a graph twice, and a stepped bias would move everything between the runs
  // (a batch routes by the bias of before it; the bias steps after the batch's forward).
  for (const std::string ffn : {"{type: moe, experts: 4, k: 2, hidden: 16, gating: loss_free, bias_rate: 0}",
                                "{type: moe, experts: 4, k: 2, hidden: 16, gating: loss_free, bias_rate: 0, "
                                "capacity_factor: 0.75}"}) {
    INFO("transformer_lm ffn " << ffn);
    const TransformerLm lm(TransformerLmConfig::from_yaml(YAML::Load(kLmBase + ", ffn: " + ffn + "}")));
    ParameterStore store(Device::cpu(), 11);
    check_routed(lm_probe(lm), store, lm.routed_sites());
  }
  const LstmLm lstm(LstmLmConfig::from_yaml(
      YAML::Load("{vocab: 12, embed_dim: 16, hidden: 16, layers: 2, dropout: 0, moe_after: [0], moe: {type: moe, "
                 "experts: 4, k: 2, hidden: 16, gating: loss_free, bias_rate: 0}}")));
  ParameterStore store(Device::cpu(), 13);
  check_routed(lm_probe(lstm), store, lstm.routed_sites());
  const TransformerModel mt(TransformerConfig::from_yaml(YAML::Load(
      "{src_vocab: 12, tgt_vocab: 12, d_model: 16, ffn_dim: 32, heads: 4, enc_layers: 2, dec_layers: 2, dropout: 0, "
      "max_positions: 32, ffn: {type: moe, experts: 8, k: 2, hidden: 8, shared: 1, bias_rate: 0, gating: {encoder: "
      "expert_choice, decoder: loss_free}}}")));
  ParameterStore mt_store(Device::cpu(), 12);
  check_routed(mt_probe(mt), mt_store, mt.routed_sites());
}
