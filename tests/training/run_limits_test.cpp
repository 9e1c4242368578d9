// training/run_limits.h: the memory advice appended to out-of-memory errors.
#include "training/run_limits.h"

#include <catch2/catch.hpp>

using namespace moe;

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
