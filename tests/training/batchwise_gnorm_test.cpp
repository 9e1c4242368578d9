// moe-train on a batchwise (strictly balanced) MoE model (docs/MODELS.md §3.10): the gate's thresholds
// learn from their own loss, per token, and are stepped outside the gradient norm that the trainer logs
// and clips by, so a small lstm_seq2seq logs a gradient norm of the same order with batchwise gating as
// with noisy top-k (before: thousands against about one), and its thresholds still learn.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "layers/moe_ffn.h"
#include "training/trainer.h"
#include "training_test_util.h"

using namespace moe;

namespace {
/// The gnorm of every train line of run_dir/metrics.jsonl, by update.
std::vector<double> gnorms(const std::string& run_dir) {
  std::vector<double> out;
  std::ifstream in(run_dir + "/metrics.jsonl");
  for (std::string s; std::getline(in, s);) {
    const YAML::Node n = YAML::Load(s);
    if (n["type"].as<std::string>() == "train") out.push_back(n["gnorm"].as<double>());
  }
  return out;
}
}  // namespace

TEST_CASE("batchwise gating: the thresholds stay out of the logged and clipped gradient norm",
          "[training][trainer][batchwise]") {
  const std::string dir = test::temp_dir("batchwise-gnorm");
  test::write_corpora(dir, 120, 10, 23);
  std::map<std::string, std::vector<double>> norm;
  for (const std::string gating : {"noisy_topk", "batchwise"}) {
    TrainOptions o = test::tiny_options(dir);
    o.run_dir = dir + "/" + gating;
    o.model = YAML::Load(
        "{type: lstm_seq2seq, d_model: 16, hidden: 16, enc_layers: 2, dec_layers: 2, bidirectional: false, "
        "encoder_moe_after: [0], decoder_moe_after: [0], dropout: 0, moe: {type: moe, experts: 8, k: 2, hidden: 16, "
        "gating: " +
        gating + "}}");
    o.max_updates = 4;
    o.valid_every = 0;
    o.save_every = 0;
    o.clip_norm = 5;
    Trainer t(o);
    t.run(false);
    norm[gating] = gnorms(o.run_dir);
    REQUIRE(norm[gating].size() == 4);
    if (gating == "batchwise") {  // the thresholds (zeros at the start) were stepped
      int thresholds = 0;
      for (const ParamEntry& e : t.params().entries()) {
        if (!is_batchwise_threshold(e)) continue;
        ++thresholds;
        for (float v : t.params().value(e.name).to_vector<float>()) CHECK(v != 0.f);
      }
      CHECK(thresholds == 2);
    }
  }
  for (size_t u = 0; u < 4; ++u) {
    INFO("update " << u + 1 << ": noisy top-k " << norm["noisy_topk"][u] << ", batchwise " << norm["batchwise"][u]);
    CHECK(std::isfinite(norm["batchwise"][u]));
    CHECK(norm["batchwise"][u] < 3 * norm["noisy_topk"][u]);
    CHECK(norm["batchwise"][u] > norm["noisy_topk"][u] / 3);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("batchwise gating: which parameters are thresholds", "[training][batchwise]") {
  auto is = [](const std::string& name) { return is_batchwise_threshold(ParamEntry{.name = name}); };
  CHECK(is("encoder.l1.moe.gate.thresholds"));
  CHECK(is("gate.thresholds"));
  CHECK_FALSE(is("encoder.l1.moe.gate.w"));
  CHECK_FALSE(is("encoder.l1.moe.xgate.thresholds"));
  CHECK_FALSE(is("gate.thresholds.b"));
}
