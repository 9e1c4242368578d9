// moe-train --dry-run's estimate (training/dry_run.h): for small models on the CPU, the training
// memory it predicts is within 25% of the CPU allocator's measured peak over two real updates of the
// same batch (Transformer, Transformer with a sparse MoE FFN, with MoA attention, LSTM LM with a
// hierarchical MoE, masked LM); its parameter counts equal the store the trainer builds (total, per
// expert, active per token); a budget too small says "does not fit" and names the largest term;
// memory sizes parse with their units. Every recipe's own dry run fitting 80 GiB is checked in
// tests/training/recipes_start_test.cpp.
#include "training/dry_run.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "config/config.h"
#include "graph/expr/binary.h"
#include "graph/expr/unary.h"
#include "graph/graph.h"
#include "models/model_registry.h"
#include "tensor/allocator.h"
#include "training/optimizer.h"

using namespace moe;

namespace {
TrainOptions options(const std::string& recipe, const std::vector<std::pair<std::string, std::string>>& keys) {
  config::Schema schema;
  register_train_keys(schema);
  config::Config c(schema);
  c.merge_file(std::string(MOE_SOURCE_DIR) + "/recipes/" + recipe);
  const bool translation = task_of_model_type(c.get_string("model.type")) == TrainTaskKind::translation;
  if (translation) {
    for (const char* k : {"data.train.src", "data.train.tgt"}) c.set_text(k, "none.txt");
    for (const char* k : {"data.vocab.src", "data.vocab.tgt"}) c.set_text(k, "none.spm");
  } else {
    c.set_text("data.train.text", "none.txt");
    c.set_text("data.vocab.path", "none.words");
  }
  for (const auto& [k, v] : keys) c.set_text(k, v);
  return TrainOptions::from_config(c);
}

DryRunOptions on_cpu() {
  DryRunOptions d;
  d.gpu = false;
  d.vocab = 1000;
  d.count_updates = false;
  return d;
}

/// The CPU allocator's peak (above what was in use before) over two updates of the dry run's batch:
/// store, two graphs' forward and backward, two Adam steps (the second graph runs with the state).
int64_t measured_peak(const TrainOptions& o, const DryRunOptions& d, int64_t* parameters) {
  Allocator& alloc = allocator_for(Device::cpu());
  alloc.release_cache();
  const int64_t base = static_cast<int64_t>(alloc.stats().in_use);
  alloc.reset_peak();
  {
    const std::unique_ptr<Model> model = create_model(dry_run_model_section(o, d));
    const TrainBatch batch = dry_run_batch(o, model->config_yaml());
    ParameterStore store(Device::cpu(), o.seed);
    const auto opt = Optimizer::create(o.optimizer, o.optim);
    for (int step = 0; step < 2; ++step) {
      Graph g(Device::cpu(), &store,
              GraphOptions{.training = true, .seed = o.seed, .step = static_cast<uint64_t>(step)});
      Builder b(g);
      Expr loss = o.task == TrainTaskKind::translation
                      ? model->loss(b, std::get<data::Batch>(batch.data), o.label_smoothing)
                      : model->lm_loss(b, std::get<data::LmBatch>(batch.data), o.label_smoothing);
      loss = b.objective(loss, batch.tokens());
      g.forward();
      g.backward(loss, 1.0 / static_cast<double>(batch.tokens()));
      if (step == 0) store.zero_grads();
      opt->step(store, 1e-4);
    }
    *parameters = store.count();
  }
  return static_cast<int64_t>(alloc.stats().peak_in_use) - base;
}
}  // namespace

TEST_CASE("dry run: the memory estimate is within 25% of the measured CPU peak", "[training][dry_run]") {
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> cases = {
      {"ci-tiny.yml", {{"data.max_len", "30"}}},
      {"ci-tiny.yml", {{"model.ffn", "{type: moe, experts: 8, k: 2, hidden: 128}"}}},
      {"ci-tiny.yml", {{"model.attention", "{type: moa, name: 4K8E32D}"}}},
      {"ci-tiny-lm.yml", {{"train.max_tokens", "2048"}}},
      {"ci-tiny-lm.yml", {{"model.type", "transformer_mlm"}, {"model.attention", "{type: moa, name: 4K8E16D}"}}},
      {"1b-word-moe-256-h.yml",
       {{"model.embed_dim", "64"},
        {"model.hidden", "64"},
        {"model.moe",
         "{type: moe, experts: 16, k: 2, groups: 4, "
         "k_secondary: 2, hidden: 128}"},
        {"train.max_tokens", "1024"},
        {"train.device", "cpu"}}},
  };
  for (const auto& [recipe, keys] : cases) {
    INFO(recipe << " " << (keys.empty() ? "" : keys.front().first + " " + keys.front().second));
    const TrainOptions o = options(recipe, keys);
    const DryRunReport r = dry_run(o, on_cpu());
    int64_t parameters = 0;
    const int64_t peak = measured_peak(o, on_cpu(), &parameters);
    CHECK(r.parameters == parameters);
    INFO(r.render() << "measured peak " << format_bytes(static_cast<size_t>(peak)));
    CHECK(std::abs(static_cast<double>(r.training_bytes() - peak)) <= 0.25 * static_cast<double>(peak));
  }
}

TEST_CASE("dry run: experts, FLOPs and the fit verdict", "[training][dry_run]") {
  // 8 experts of 64 -> 128 -> 64 (two weight matrices each) at each of the 4 FFN sites, k = 2.
  const TrainOptions o = options("ci-tiny.yml", {{"model.ffn", "{type: moe, experts: 8, k: 2, hidden: 128}"}});
  DryRunOptions d = on_cpu();
  const DryRunReport r = dry_run(o, d);
  CHECK(r.experts == 8);
  CHECK(r.per_expert == 2 * 64 * 128);
  CHECK(r.expert_parameters == 4 * 8 * 2 * 64 * 128);
  CHECK(r.active_per_token == r.parameters - 4 * 6 * 2 * 64 * 128);
  CHECK(r.forward_flops_per_token > 2.0 * static_cast<double>(r.active_per_token - 2 * 1000 * 64));
  CHECK(r.train_flops_per_token == Approx(3 * r.forward_flops_per_token));
  CHECK(r.updates_per_epoch == -1);
  CHECK(r.fits());
  CHECK_THAT(r.render(), Catch::Contains("unknown") && Catch::Contains("fits"));
  d.memory_bytes = 1e5;
  const DryRunReport small = dry_run(o, d);
  CHECK_FALSE(small.fits());
  CHECK_THAT(small.render(), Catch::Contains("does not fit") && Catch::Contains(small.largest().name));
}

TEST_CASE("dry run: an LSTM's MoE layer counts as experts without a type; none without MoE layers",
          "[training][dry_run]") {
  // The LSTM models' `moe` map is an MoE layer unless it says otherwise (lstm_lm.cpp), so no `type` here.
  const std::string moe = "{experts: 8, k: 2, hidden: 32, groups: 2, k_secondary: 2}";
  const DryRunReport r = dry_run(options("1b-word-moe-4.yml", {{"model.moe", moe}, {"model.embed_dim", "16"},
                                                              {"model.hidden", "16"}, {"model.sampled_softmax", "0"}}),
                                 on_cpu());
  CHECK(r.experts == 8);
  CHECK(r.active == 4);  // hierarchical: 2 groups x 2 experts
  CHECK(r.expert_parameters == 8 * 2 * 16 * 32);
  // The same map with no layer placed (moe_after: []) is no expert at all.
  const TrainOptions none = options("1b-word-moe-4.yml", {{"model.moe", moe}, {"model.moe_after", "[]"},
                                                          {"model.embed_dim", "16"}, {"model.hidden", "16"}});
  CHECK(dry_run(none, on_cpu()).experts == 0);
  // Expert parallelism: the ranks follow from the site's experts_per_rank.
  const TrainOptions placed = options("1b-word-moe-4.yml", {{"model.moe", "{experts: 8, experts_per_rank: 4}"},
                                                            {"model.embed_dim", "16"},
                                                            {"model.hidden", "16"},
                                                            {"model.sampled_softmax", "0"}});
  CHECK(dry_run(placed, on_cpu()).ranks == 2);
}

TEST_CASE("dry run: the routers after 2017, as their sites describe themselves", "[training][dry_run][router]") {
  // ci-tiny (2 + 2 layers, d 64): MoE in every second layer (l1 of each stack), 8 experts of 64 -> 128 -> 64,
  // k 2, one shared expert of the same size (always active: never counted out).
  const DryRunReport r = dry_run(
      options("ci-tiny.yml", {{"model.ffn", "{type: moe, experts: 8, k: 2, hidden: 128, moe_every: 2, shared: 1}"}}),
      on_cpu());
  CHECK(r.experts == 8);
  CHECK(r.shared == 1);
  CHECK(r.per_expert == 2 * 64 * 128);
  CHECK(r.expert_parameters == 2 * 8 * 2 * 64 * 128);
  CHECK(r.active_per_token == r.parameters - 2 * 6 * 2 * 64 * 128);
  CHECK_THAT(r.render(), Catch::Contains("2 active + 1 shared"));
  // Expert choice in the encoder (k 1: one expert per token on average), Switch top-2 in the decoder.
  const DryRunReport mixed = dry_run(
      options("ci-tiny.yml", {{"model.ffn",
                               "{type: moe, experts: 8, k: 1, hidden: 128, gating: {encoder: expert_choice, decoder: "
                               "switch}}"}}),
      on_cpu());
  CHECK(mixed.active_per_token == mixed.parameters - 4 * 7 * 2 * 64 * 128);
  // A token capacity runs every expert on C rows: the FLOPs grow with the factor.
  const auto flops = [](const std::string& ffn) {
    return dry_run(options("ci-tiny.yml", {{"model.ffn", ffn}}), on_cpu()).forward_flops_per_token;
  };
  const double dropless = flops("{type: moe, gating: switch, experts: 8, k: 1, hidden: 128}");
  const double doubled = flops("{type: moe, gating: switch, experts: 8, k: 1, hidden: 128, capacity_factor: 2.0}");
  CHECK(doubled > dropless * 1.1);
}

TEST_CASE("dry run: vocabulary sizes and memory sizes", "[training][dry_run]") {
  DryRunOptions d = on_cpu();
  d.vocab = 0;
  // A word list that does not exist, no data.vocab.size: the error says how to give one.
  config::Schema schema;
  register_train_keys(schema);
  config::Config c(schema);
  c.merge_text(
      "model: {type: lstm_lm}\ndata: {train: {text: none.txt}, vocab: {path: none.words, type: word}}\n"
      "train: {max_updates: 1}\n",
      "word-list recipe");
  CHECK_THROWS_WITH(dry_run(TrainOptions::from_config(c), d), Catch::Contains("--dry-run-vocab"));
  CHECK(dry_run(options("1b-word-moe-4.yml", {}), d).src_vocab == 793471);  // data.vocab.size
  CHECK(dry_run(options("ci-tiny-lm.yml", {}), d).src_vocab == 2000);       // data.vocab.size 2000
  CHECK(parse_memory_size("80GiB", "--m") == 80.0 * (1ull << 30));
  CHECK(parse_memory_size("512MiB", "--m") == 512.0 * (1 << 20));
  CHECK(parse_memory_size("40GB", "--m") == 40e9);
  CHECK(parse_memory_size("1e9", "--m") == 1e9);
  CHECK_THROWS_WITH(parse_memory_size("80 gigs", "--dry-run-memory"), Catch::Contains("--dry-run-memory"));
}
