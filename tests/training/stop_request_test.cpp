// moe-train's stop signals (training/stop_request.h): train.on_signal parsed once into its enum; a SIGTERM
// during an update stops the Trainer after that update with checkpoint.last saved, and --resume then ends
// with a checkpoint byte-identical to an uninterrupted run's. (Signals at random moments, 1 and 2 MPI
// ranks, a second SIGINT and on_signal exit: tests/scripts/train_signals.sh.)
#include "training/stop_request.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/stop_signal.h"
#include "config/recipe_args.h"
#include "tensor/safetensors.h"
#include "training/trainer.h"
#include "training/training_state.h"
#include "training_test_util.h"

using namespace moe;
namespace fs = std::filesystem;

namespace {
std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}
}  // namespace

TEST_CASE("stop request: train.on_signal is one of two values", "[training][signals]") {
  config::Schema schema;
  register_train_keys(schema);
  const auto with = [&](const std::string& value) {
    return TrainOptions::from_config(
        config::load_config(schema, {"--data.train.src", "a", "--data.train.tgt", "b", "--data.vocab.src", "v",
                                     "--data.vocab.tgt", "v", "--train.max_updates", "1", "--train.on_signal", value}));
  };
  CHECK(with("exit").on_signal == OnSignal::exit);
  CHECK(with("save-and-exit").on_signal == OnSignal::save_and_exit);
  CHECK_THROWS_WITH(with("later"), Catch::Contains("train.on_signal: 'later' is not one of save-and-exit | exit"));
}

TEST_CASE("stop request: a signal is agreed on, in exit mode ignored", "[training][signals]") {
  StopRequest save(OnSignal::save_and_exit);  // installs the handlers
  clear_stop_signal();
  CHECK_FALSE(save.agreed(nullptr));
  std::raise(SIGUSR1);
  CHECK(StopRequest(OnSignal::exit).agreed(nullptr) == false);
  CHECK(save.agreed(nullptr));
  CHECK(save.stopped());
  CHECK(save.cause() == "SIGUSR1");
  clear_stop_signal();
}

TEST_CASE("trainer: SIGTERM in an update stops after it with checkpoint.last saved; --resume ends identically",
          "[training][trainer][signals]") {
  const std::string dir = test::temp_dir("signal");
  test::write_corpora(dir, 200, 30, 5);
  TrainOptions full = test::tiny_options(dir);
  full.run_dir = dir + "/full";
  CHECK(Trainer(full).run(false) == TrainEnd::completed);

  TrainOptions part = full;
  part.run_dir = dir + "/part";
  clear_stop_signal();
  Trainer stopped(part);
  stopped.set_update_hook([](ParameterStore&, int64_t next) {
    if (next == 5) std::raise(SIGTERM);  // arrives while update 5 is being made
  });
  CHECK(stopped.run(false) == TrainEnd::stopped);
  CHECK(stopped.state().update == 5);  // the update in flight was finished, no other begun
  const std::string last = part.run_dir + "/checkpoint.last.safetensors";
  CHECK(load_safetensors(last).metadata.at("moe.update") == "5");
  CHECK(fs::exists(state_path_for(last)));
  clear_stop_signal();

  CHECK(Trainer(part).run(true) == TrainEnd::completed);
  test::check_same_metrics(test::read_metrics(full.run_dir), test::read_metrics(part.run_dir));
  CHECK(bytes_of(last) == bytes_of(full.run_dir + "/checkpoint.last.safetensors"));
  CHECK(bytes_of(state_path_for(last)) == bytes_of(state_path_for(full.run_dir + "/checkpoint.last.safetensors")));
  fs::remove_all(dir);
}
