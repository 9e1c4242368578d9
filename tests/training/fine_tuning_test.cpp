// train.init_from and train.trainable (lib/training/fine_tuning.h): parameters copied by name with
// the missing ones kept at their initialisation, shape mismatches and unmatched patterns as errors,
// and a fine-tuning run that starts from a trained checkpoint, trains only the selected parameters
// (the rest stay bit-identical) and stops at train.max_minutes.
#include "training/fine_tuning.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/error.h"
#include "tensor/safetensors.h"
#include "training/trainer.h"
#include "training_test_util.h"

using namespace moe;
using Catch::Matchers::Contains;

namespace {
std::vector<float> values_of(const ParameterStore& s, const std::string& name) {
  return s.value(name).to_vector<float>();
}

ParameterStore store_with(const std::vector<std::pair<std::string, Shape>>& params, uint64_t seed) {
  ParameterStore s(Device::cpu(), seed);
  for (const auto& [name, shape] : params)
    s.declare(name, shape, Init::normal(0, 1), name.find("gate") != std::string::npos ? "gate" : "");
  s.allocate();
  return s;
}
}  // namespace

TEST_CASE("fine-tuning: init_from copies by name and keeps the missing ones", "[training][finetune]") {
  const std::string dir = test::temp_dir("init_from");
  ParameterStore trained = store_with({{"enc.w", Shape{3, 4}}, {"dec.w", Shape{4}}, {"extra", Shape{2}}}, 7);
  save_safetensors(
      dir + "/ck.safetensors",
      {{"enc.w", trained.value("enc.w")}, {"dec.w", trained.value("dec.w")}, {"extra", trained.value("extra")}});
  ParameterStore fresh = store_with({{"enc.w", Shape{3, 4}}, {"dec.w", Shape{4}}, {"l0.gate.w", Shape{4, 2}}}, 9);
  const std::vector<float> gate_init = values_of(fresh, "l0.gate.w");
  const InitFromReport r = init_from_checkpoint(dir + "/ck.safetensors", fresh);
  CHECK(r.copied == 2);
  CHECK(r.unused == 1);
  CHECK(r.missing == std::vector<std::string>{"l0.gate.w"});
  CHECK(values_of(fresh, "enc.w") == values_of(trained, "enc.w"));
  CHECK(values_of(fresh, "dec.w") == values_of(trained, "dec.w"));
  CHECK(values_of(fresh, "l0.gate.w") == gate_init);

  ParameterStore wrong = store_with({{"enc.w", Shape{4, 3}}}, 1);
  CHECK_THROWS_WITH(init_from_checkpoint(dir + "/ck.safetensors", wrong), Contains("'enc.w'") && Contains("[4,3]"));
  ParameterStore unrelated = store_with({{"other", Shape{2}}}, 1);
  CHECK_THROWS_WITH(init_from_checkpoint(dir + "/ck.safetensors", unrelated), Contains("shares no parameter"));
  CHECK_THROWS_WITH(init_from_checkpoint(dir + "/none.safetensors", unrelated), Contains("none.safetensors"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("fine-tuning: trainable selects groups and name patterns", "[training][finetune]") {
  auto make = [] {
    return store_with({{"encoder.l0.self_attn.q.w", Shape{2}},
                       {"encoder.l0.self_attn.o.w", Shape{2}},
                       {"encoder.l0.self_attn.gate.l1.w", Shape{2}},
                       {"decoder.l0.cross_attn.o.b", Shape{2}},
                       {"decoder.l0.ffn.w", Shape{2}}},
                      1);
  };
  auto trainable = [](const ParameterStore& s) {
    std::vector<std::string> names;
    for (const ParamEntry& e : s.entries())
      if (e.trainable) names.push_back(e.name);
    return names;
  };
  ParameterStore all = make();
  CHECK(restrict_trainable(all, {}) == 5);
  CHECK(trainable(all).size() == 5);
  ParameterStore ftg = make();
  CHECK(restrict_trainable(ftg, {"gate"}) == 1);
  CHECK(trainable(ftg) == std::vector<std::string>{"encoder.l0.self_attn.gate.l1.w"});
  ParameterStore ftg_plus = make();
  CHECK(restrict_trainable(ftg_plus, {"gate", ".*_attn\\.o\\..*"}) == 3);
  CHECK(trainable(ftg_plus) == std::vector<std::string>{"encoder.l0.self_attn.o.w", "encoder.l0.self_attn.gate.l1.w",
                                                        "decoder.l0.cross_attn.o.b"});
  // The optimizer's ranges skip frozen parameters.
  int64_t covered = 0;
  for (const auto& [begin, end] : ftg.trainable_ranges()) covered += end - begin;
  CHECK(covered == 16);  // one parameter, padded to 16 elements
  ParameterStore bad = make();
  CHECK_THROWS_WITH(restrict_trainable(bad, {"gates"}), Contains("'gates' selects no parameter") && Contains("gate"));
  CHECK_THROWS_WITH(restrict_trainable(bad, {"(unclosed"}), Contains("not a valid regular expression"));
}

TEST_CASE("fine-tuning: a run from a checkpoint trains only the selected parameters", "[training][finetune]") {
  const std::string dir = test::temp_dir("finetune");
  test::write_corpora(dir, 200, 20, 5);
  TrainOptions pre = test::tiny_options(dir);
  pre.max_updates = 6;
  pre.run_dir = dir + "/pre";
  Trainer(pre).run(false);
  const std::string ck = pre.run_dir + "/checkpoint.last.safetensors";
  const SafetensorsFile before = load_safetensors(ck);

  TrainOptions ft = pre;
  ft.run_dir = dir + "/ft";
  ft.init_from = ck;
  ft.trainable = {".*ffn.*"};
  ft.max_updates = 5;
  Trainer t(ft);
  t.run(false);
  int changed = 0, frozen = 0;
  for (const ParamEntry& e : t.params().entries()) {
    const std::vector<float> now = values_of(t.params(), e.name);
    const std::vector<float> then = before.get(e.name).to_vector<float>();
    if (e.name.find("ffn") != std::string::npos) {
      changed += now != then;
    } else {
      INFO(e.name);
      CHECK(now == then);  // bit-identical
      ++frozen;
    }
  }
  CHECK(changed > 0);
  CHECK(frozen > 0);

  TrainOptions timed = pre;  // a time limit alone ends training (after the first update here)
  timed.run_dir = dir + "/timed";
  timed.max_updates = 0;
  timed.max_minutes = 1e-6;
  Trainer(timed).run(false);
  CHECK(test::read_metrics(timed.run_dir).back().update == 1);
  std::filesystem::remove_all(dir);
}
