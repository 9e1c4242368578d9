// MAE training in moe-train (block coordinate descent, docs/MODELS.md §1.6): a G step changes only the
// gate parameters, an F step never changes them, G steps happen only in G epochs, NOBCD's joint step
// trains both, UNI-MAE has no gates and only F steps, FTG (trainable [gate], joint) changes only the
// gates, and a bcd run whose trainable set leaves nothing for F steps is an error. Each optimizer
// step is observed through Trainer::set_step_hook (store state, the gates' running statistics, aside).
// moe-train warns at start-up when decoder gates read whole targets (gate_input paper), only then.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "common/error.h"
#include "training/trainer.h"
#include "training_test_util.h"

using namespace moe;
using Catch::Matchers::Contains;

namespace {
using Snapshot = std::map<std::string, std::vector<float>>;

Snapshot snapshot(const ParameterStore& s) {
  Snapshot out;
  for (const ParamEntry& e : s.entries()) out[e.name] = s.value(e.name).to_vector<float>();
  return out;
}

const std::string& group_of(const ParameterStore& s, const std::string& name) { return s.entry(s.find(name)).group; }

/// What one step changed: gate and other trainable parameters (the gates' batch-norm running
/// statistics, store state, move with every training forward pass and are not counted).
struct Change {
  std::string step;
  int gates = 0, others = 0;
};

/// Trains `o` and records, per optimizer step, how many gate / other parameter tensors changed.
std::vector<Change> observe(const TrainOptions& o, int* gate_tensors = nullptr) {
  Trainer t(o);
  std::vector<Change> changes;
  Snapshot last;
  t.set_step_hook([&](const ParameterStore& s, UpdatePass pass) {
    Snapshot now = snapshot(s);
    if (last.empty()) last = now;  // first call: compare against the state before training below
    Change c{enum_name(pass)};
    for (const auto& [name, v] : now)
      if (v != last[name] && group_of(s, name) != "state") (group_of(s, name) == "gate" ? c.gates : c.others) += 1;
    changes.push_back(c);
    last = std::move(now);
  });
  t.set_update_hook([&](ParameterStore& s, int64_t update) {
    if (update == 1) last = snapshot(s);
  });
  t.run(false);
  if (gate_tensors) {
    *gate_tensors = 0;
    for (const ParamEntry& e : t.params().entries()) *gate_tensors += e.group == "gate";
  }
  return changes;
}

TrainOptions mae_options(const std::string& dir, const std::string& attention) {
  TrainOptions o = test::tiny_options(dir);
  o.model["attention"] = YAML::Load(attention);
  o.max_updates = 6;
  o.max_epochs = 0;
  o.valid_every = 0;
  o.save_every = 0;
  return o;
}
}  // namespace

TEST_CASE("bcd trainer: G steps change only the gates, F steps never touch them", "[training][bcd]") {
  const std::string dir = test::temp_dir("bcd_gf");
  test::write_corpora(dir, 60, 10, 11);  // a few updates per epoch
  TrainOptions o = mae_options(dir, "{type: mae, name: MAE-1}");
  o.bcd.g_every = 1;  // every epoch is a G epoch
  const auto steps = observe(o);
  REQUIRE(steps.size() == 12);
  for (size_t i = 0; i < steps.size(); ++i) {
    INFO("step " << i << " " << steps[i].step);
    CHECK(steps[i].step == (i % 2 == 0 ? "G" : "F"));
    if (steps[i].step == "G") {
      CHECK(steps[i].gates > 0);
      CHECK(steps[i].others == 0);
    } else {
      CHECK(steps[i].gates == 0);
      CHECK(steps[i].others > 0);
    }
  }
  o.bcd.g_every = 5;  // epochs 1, 2, ... of this short run hold no G epoch
  for (const Change& c : observe(o)) {
    CHECK(c.step == "F");
    CHECK(c.gates == 0);
  }
}

TEST_CASE("bcd trainer: NOBCD, UNI-MAE and gate-only fine-tuning", "[training][bcd]") {
  const std::string dir = test::temp_dir("bcd_variants");
  test::write_corpora(dir, 60, 10, 13);
  for (const Change& c : observe(mae_options(dir, "{type: mae, name: NOBCD-1}"))) {
    CHECK(c.step == "joint");
    CHECK(c.gates > 0);
    CHECK(c.others > 0);
  }
  int gates = -1;
  for (const Change& c : observe(mae_options(dir, "{type: mae, name: UNI-MAE-1}"), &gates)) {
    CHECK(c.step == "F");
    CHECK(c.others > 0);
  }
  CHECK(gates == 0);
  TrainOptions ftg = mae_options(dir, "{type: mae, name: NOBCD-1}");
  ftg.trainable = {"gate"};
  for (const Change& c : observe(ftg, &gates)) {
    CHECK(c.gates > 0);
    CHECK(c.others == 0);
  }
  CHECK(gates > 0);
  TrainOptions bad = mae_options(dir, "{type: mae, name: MAE-1}");
  bad.trainable = {"gate"};
  CHECK_THROWS_WITH(Trainer(bad).run(false), Contains("leaves nothing") && Contains("training: joint"));
}

TEST_CASE("bcd trainer: an interrupted and resumed MAE run logs the losses of an uninterrupted one",
          "[training][bcd][resume]") {
  const std::string dir = test::temp_dir("bcd_resume");
  test::write_corpora(dir, 60, 10, 15);
  TrainOptions o = mae_options(dir, "{type: mae, name: MAE-1}");
  o.bcd.g_every = 2;  // G epochs 2, 4, ...: the interruption falls inside the schedule
  o.max_updates = 10;
  o.valid_every = 2;
  o.save_every = 2;
  test::check_resume_reproduces(o, dir, 6);
}

TEST_CASE("bcd trainer: whole-target decoder gates (gate_input paper) are trained with a warning",
          "[training][bcd][mae]") {
  const std::string dir = test::temp_dir("bcd_warning");
  test::write_corpora(dir, 20, 5, 17);
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  for (const std::string att : {"{type: mae, name: MAE-1, gate_input: paper}", "{type: mae, name: MAE-1}",
                                "{type: mae, name: NOBCD-1, gate_input: {decoder_cross: full_mean}}"}) {
    INFO(att);
    log.str("");
    TrainOptions o = mae_options(dir, att);
    o.max_updates = 1;
    Trainer(o).run(false);
    CHECK(log.str().find("gates: plain SGD") != std::string::npos);  // the sink sees the start-up
    const bool paper = att.find("paper") != std::string::npos, cross = att.find("decoder_cross") != std::string::npos;
    CHECK((log.str().find("[warning] moe-train: the MAE gates at decoder_self, decoder_cross read full_mean") !=
           std::string::npos) == paper);
    CHECK((log.str().find("[warning] moe-train: the MAE gates at decoder_cross read full_mean") != std::string::npos) ==
          cross);
    if (paper || cross)
      CHECK(log.str().find("validation loss and perplexity see future target tokens") != std::string::npos);
  }
  spdlog::default_logger()->sinks().pop_back();
}
