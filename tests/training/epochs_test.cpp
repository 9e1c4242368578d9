// Training given in epochs (issue 22): a linear schedule over train.max_epochs takes its length from the
// data (max_epochs x updates per epoch, counted before training) and reaches zero at the last update;
// train.numbered_checkpoints epochs writes one numbered checkpoint per epoch end (the ones MoA averages)
// while save_every writes checkpoint.last only; a translation task counts its epoch's batches.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "training/trainer.h"
#include "training_test_util.h"

using namespace moe;
namespace fs = std::filesystem;

namespace {
/// The "lr" of every training line of run_dir/metrics.jsonl.
std::vector<double> logged_lr(const std::string& run_dir) {
  std::vector<double> out;
  std::ifstream in(run_dir + "/metrics.jsonl");
  for (std::string s; std::getline(in, s);) {
    const YAML::Node n = YAML::Load(s);
    if (n["type"].as<std::string>() == "train") out.push_back(n["lr"].as<double>());
  }
  return out;
}

std::set<int64_t> numbered(const std::string& run_dir) {
  std::set<int64_t> out;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("checkpoint.", 0) == 0 && name.find(".state.") == std::string::npos &&
        std::isdigit(static_cast<unsigned char>(name[11])))
      out.insert(std::stoll(name.substr(11)));
  }
  return out;
}
}  // namespace

TEST_CASE("trainer: a linear schedule over max_epochs and numbered checkpoints per epoch", "[training][trainer]") {
  const std::string dir = test::temp_dir("epochs");
  test::write_lm_texts(dir, 60, 10, 1);
  TrainOptions o = test::tiny_lm_options(dir);
  o.max_updates = 0;
  o.max_epochs = 3;
  o.schedule = ScheduleOptions{LrScheduleKind::linear, 1e-2, 0, 2, 0};
  o.schedule.max_epochs = 3;
  o.numbered_checkpoints = NumberedCheckpoints::epochs;
  o.keep_last = 10;
  o.save_every = 1;
  o.valid_every = 0;
  Trainer t(o);
  t.run(false);
  const int64_t total = t.state().update;
  REQUIRE(total % 3 == 0);
  const int64_t per_epoch = total / 3;
  CHECK(per_epoch >= 2);
  CHECK(t.lr_schedule().options().max_updates == total);
  const std::vector<double> lr = logged_lr(o.run_dir);
  REQUIRE(static_cast<int64_t>(lr.size()) == total);
  CHECK(lr[0] == Approx(5e-3));                            // warm-up: 1 of 2
  CHECK(lr[2] == Approx(1e-2 * (1 - 1.0 / (total - 2))));  // decaying over the rest
  CHECK(lr.back() == Approx(0).margin(1e-12));             // zero at the last update of the last epoch
  CHECK(numbered(o.run_dir) == std::set<int64_t>{per_epoch, 2 * per_epoch, 3 * per_epoch});
  fs::remove_all(dir);
}

TEST_CASE("trainer: a translation task counts the batches of its epoch", "[training][trainer]") {
  const std::string dir = test::temp_dir("epochs-mt");
  test::write_corpora(dir, 120, 10, 1);
  TrainOptions o = test::tiny_options(dir);
  o.max_updates = 0;
  o.max_epochs = 2;
  o.update_freq = 2;
  o.schedule = ScheduleOptions{LrScheduleKind::cosine, 1e-3, 0, 1, 0};
  o.schedule.max_epochs = 2;
  o.valid_every = 0;
  Trainer t(o);
  t.run(false);
  // The decay spans both epochs: at most a few updates apart (the second epoch cuts its own windows).
  CHECK(std::abs(t.lr_schedule().options().max_updates - t.state().update) <= 2);
  fs::remove_all(dir);
}
