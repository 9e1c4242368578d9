// training/run_limits.h: the checkpoint estimate, the run folder's checks (not writable, too little room,
// with the figures in the error) and the memory advice appended to out-of-memory errors.
#include "training/run_limits.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "training_test_util.h"

using namespace moe;

TEST_CASE("run limits: checkpoint estimate", "[training][limits]") {
  const CheckpointEstimate adam = estimate_checkpoint(1000, 500, Optimizer::Kind::adam);
  CHECK(adam.checkpoint == 4000 + 500 + (64 << 10));
  CHECK(adam.state == 8000 + (64 << 10));
  CHECK(estimate_checkpoint(1000, 0, Optimizer::Kind::sgd).state == 4000 + (64 << 10));
  CHECK(adam.pair() == adam.checkpoint + adam.state);
}

TEST_CASE("run limits: the run folder is writable and has room for two checkpoints", "[training][limits]") {
  const std::string dir = test::temp_dir("limits");
  CHECK_NOTHROW(create_run_dir(dir + "/run"));
  CHECK_NOTHROW(check_room(dir, estimate_checkpoint(1000, 0, Optimizer::Kind::adam), 3));
  CHECK(std::filesystem::is_empty(dir + "/run"));  // the probe file is gone
  CHECK_THROWS_WITH(create_run_dir("/proc"), Catch::Contains("run_dir /proc is not writable"));
  CHECK_THROWS_WITH(create_run_dir("/proc/none/run"), Catch::Contains("run_dir /proc/none/run cannot be created"));
  const int64_t huge = int64_t(1) << 52;  // 16 PiB of checkpoint per pair
  CHECK_THROWS_WITH(check_room(dir, estimate_checkpoint(huge, 0, Optimizer::Kind::adam), 3),
                    Catch::Contains("run_dir " + dir + " has ") && Catch::Contains("free, less than the ") &&
                        Catch::Contains("that two checkpoints need (each ") &&
                        Catch::Contains("estimated from the model"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("run limits: memory advice names the keys and their values", "[training][limits]") {
  TrainOptions o;
  o.max_tokens = 4000;
  o.update_freq = 2;
  const std::string gpu = memory_advice(o, true), cpu = memory_advice(o, false);
  CHECK(gpu.find("lower train.max_tokens (now 4000) and raise train.update_freq (now 2)") != std::string::npos);
  CHECK(gpu.find("train.dtype bf16 (now f32)") != std::string::npos);
  CHECK(cpu.find("train.dtype") == std::string::npos);  // the CPU trains in f32 only
  o.dtype = DType::bf16;
  CHECK(memory_advice(o, true).find("train.dtype") == std::string::npos);
}
