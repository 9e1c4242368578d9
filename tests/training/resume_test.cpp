// The trainer end to end on a tiny Transformer (CPU): the loss falls, metrics.jsonl holds one line
// per update plus validations, checkpoints and their states exist, an interrupted-and-resumed run
// logs exactly the losses of the uninterrupted one (dropout on, so the RNG position matters too),
// gradient accumulation over update_freq batches, a run killed while it replaces checkpoint.last, and
// --resume errors without a checkpoint.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "training/trainer.h"
#include "training_test_util.h"

using namespace moe;
namespace fs = std::filesystem;

using test::read_metrics;
using Line = test::MetricsLine;

TEST_CASE("trainer: trains, logs, validates and saves", "[training][trainer]") {
  const std::string dir = test::temp_dir("train");
  test::write_corpora(dir, 300, 40, 1);
  TrainOptions o = test::tiny_options(dir);
  o.max_updates = 40;
  o.valid_every = 20;
  o.save_every = 20;
  o.keep_last = 1;
  Trainer(o, "# the merged configuration\n").run(false);
  const auto lines = read_metrics(o.run_dir);
  std::vector<Line> train, valid;
  for (const auto& l : lines) (l.type == "train" ? train : valid).push_back(l);
  REQUIRE(train.size() == 40);
  for (int64_t i = 0; i < 40; ++i) CHECK(train[static_cast<size_t>(i)].update == i + 1);
  REQUIRE(valid.size() == 2);
  CHECK(valid[0].update == 20);
  CHECK(valid[1].update == 40);
  INFO("first loss " << train.front().loss << ", last " << train.back().loss);
  CHECK(train.front().loss > 2.5);  // about log(24) = 3.2 (+ label smoothing) at the start
  CHECK(train.back().loss < train.front().loss - 0.5);
  CHECK(valid[1].loss < valid[0].loss);
  for (const char* f : {"checkpoint.last.safetensors", "checkpoint.last.state.safetensors",
                        "checkpoint.best.safetensors", "checkpoint.40.safetensors", "config.yml", "metrics.jsonl"})
    CHECK(fs::exists(o.run_dir + "/" + f));
  CHECK_FALSE(fs::exists(o.run_dir + "/checkpoint.20.safetensors"));  // keep_last 1
  CHECK(fs::exists(dir + "/vocab.txt"));                              // built from the training data
  fs::remove_all(dir);
}

TEST_CASE("trainer: an interrupted and resumed run logs the losses of an uninterrupted one",
          "[training][trainer][resume]") {
  const std::string dir = test::temp_dir("resume");
  test::write_corpora(dir, 200, 30, 3);
  TrainOptions full = test::tiny_options(dir);
  full.max_updates = 12;
  full.update_freq = 2;  // accumulation and the data position inside an update
  full.log_every = 1;
  full.valid_every = 3;  // divides the interruption point: both runs validate at the same updates
  full.save_every = 3;
  test::check_resume_reproduces(full, dir, 6);
  fs::remove_all(dir);
}

TEST_CASE("trainer: a run killed while it replaces checkpoint.last resumes exactly", "[training][trainer][resume]") {
  // save() moves the old state to checkpoint.last.state.previous.safetensors, writes the new state, then the new
  // checkpoint. Rebuild what a kill leaves in each window and check that --resume reproduces the whole run.
  const std::string dir = test::temp_dir("killed");
  test::write_corpora(dir, 200, 30, 3);
  TrainOptions full = test::tiny_options(dir);
  full.max_updates = 12;
  full.log_every = 1;
  full.valid_every = full.save_every = 3;
  full.run_dir = dir + "/full";
  Trainer(full).run(false);
  const std::string ckpt = "/checkpoint.last.safetensors", state = "/checkpoint.last.state.safetensors",
                    previous = "/checkpoint.last.state.previous.safetensors";
  for (const bool new_state_written : {false, true}) {
    INFO("killed after " << (new_state_written ? "writing the new state" : "moving the old state aside"));
    TrainOptions part = full;
    part.run_dir = dir + "/part" + std::to_string(new_state_written);
    part.max_updates = 6;
    part.schedule.max_updates = full.max_updates;
    Trainer(part).run(false);
    fs::copy_file(part.run_dir + ckpt, dir + "/ckpt6", fs::copy_options::overwrite_existing);
    fs::copy_file(part.run_dir + state, dir + "/state6", fs::copy_options::overwrite_existing);
    part.max_updates = 9;
    Trainer(part).run(true);  // checkpoint.last and its state are now those of update 9
    fs::copy_file(dir + "/ckpt6", part.run_dir + ckpt, fs::copy_options::overwrite_existing);
    fs::copy_file(dir + "/state6", part.run_dir + previous);
    if (!new_state_written) fs::remove(part.run_dir + state);
    part.max_updates = 12;
    Trainer(part).run(true);
    test::check_same_metrics(read_metrics(full.run_dir), read_metrics(part.run_dir));
    CHECK(fs::exists(part.run_dir + state));
    CHECK_FALSE(fs::exists(part.run_dir + previous));
  }
  // Without the previous state, the mismatched pair is refused with the updates of both.
  TrainOptions broken = full;
  broken.run_dir = dir + "/part1";
  fs::copy_file(dir + "/ckpt6", broken.run_dir + ckpt, fs::copy_options::overwrite_existing);
  CHECK_THROWS_WITH(Trainer(broken).run(true), Catch::Contains("update 6") && Catch::Contains("update 12") &&
                                                   Catch::Contains("no training state of the same update"));
  fs::remove_all(dir);
}

TEST_CASE("trainer: resume errors and option errors", "[training][trainer]") {
  const std::string dir = test::temp_dir("errors");
  test::write_corpora(dir, 20, 5, 5);
  TrainOptions o = test::tiny_options(dir);
  CHECK_THROWS_WITH(Trainer(o).run(true), Catch::Contains("--resume") && Catch::Contains("checkpoint.last"));
  TrainOptions bad = o;
  bad.data.train_src = dir + "/missing.src";
  CHECK_THROWS_WITH(Trainer(bad).run(false), Catch::Contains("missing.src"));
  TrainOptions lm = o;
  lm.model["type"] = "no_such_model";
  CHECK_THROWS_WITH(Trainer(lm).run(false), Catch::Contains("no_such_model"));
  fs::remove_all(dir);
}

TEST_CASE("trainer: early stopping after validations without improvement", "[training][trainer]") {
  const std::string dir = test::temp_dir("early");
  test::write_corpora(dir, 60, 10, 13);
  TrainOptions o = test::tiny_options(dir);
  o.schedule = ScheduleOptions{LrScheduleKind::fixed, 1e-30, 0, 0, 0};  // updates below the parameters' precision
  o.max_updates = 20;
  o.valid_every = 2;
  o.save_every = 0;
  o.early_stopping = 2;
  Trainer t(o);
  t.run(false);
  CHECK(t.state().update == 6);  // validations at 2 (best), 4 and 6 (no improvement) -> stop
  CHECK(t.state().best_update == 2);
  CHECK(t.state().bad_validations == 2);
  CHECK(fs::exists(o.run_dir + "/checkpoint.best.safetensors"));
  CHECK(fs::exists(o.run_dir + "/checkpoint.last.safetensors"));  // saved at the end
  fs::remove_all(dir);
}
