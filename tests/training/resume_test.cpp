// The trainer end to end on a tiny Transformer (CPU): the loss falls, metrics.jsonl holds one line
// per update plus validations, checkpoints and their states exist, an interrupted-and-resumed run
// logs exactly the losses of the uninterrupted one (dropout on, so the RNG position matters too),
// gradient accumulation over update_freq batches, and --resume errors without a checkpoint.
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
  test::write_corpus(dir, "train", 300, 1);
  test::write_corpus(dir, "valid", 40, 2);
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
  test::write_corpus(dir, "train", 200, 3);
  test::write_corpus(dir, "valid", 30, 4);
  TrainOptions full = test::tiny_options(dir);
  full.max_updates = 12;
  full.update_freq = 2;  // accumulation and the data position inside an update
  full.log_every = 1;
  full.valid_every = 3;  // divides the interruption point: both runs validate at the same updates
  full.save_every = 3;
  test::check_resume_reproduces(full, dir, 6);
  fs::remove_all(dir);
}

TEST_CASE("trainer: resume errors and option errors", "[training][trainer]") {
  const std::string dir = test::temp_dir("errors");
  test::write_corpus(dir, "train", 20, 5);
  test::write_corpus(dir, "valid", 5, 6);
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
  test::write_corpus(dir, "train", 60, 13);
  test::write_corpus(dir, "valid", 10, 14);
  TrainOptions o = test::tiny_options(dir);
  o.schedule = ScheduleOptions{"fixed", 1e-30, 0, 0, 0};  // updates below the parameters' precision
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
