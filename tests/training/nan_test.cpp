// NaN/Inf handling of the trainer: a NaN loss stops training with an error naming the update and
// writes no checkpoint after it; with train.skip_nan_batches the batch is skipped and training goes
// on; endless skipping is an error. NaNs are injected through Trainer::set_update_hook.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>

#include "common/error.h"
#include "tensor/safetensors.h"
#include "training/trainer.h"
#include "training_test_util.h"

using namespace moe;
namespace fs = std::filesystem;

namespace {
std::vector<float> fill_nan(ParameterStore& store) {
  Tensor v = store.values();
  const std::vector<float> saved = v.to_vector<float>();
  v.copy_from(
      Tensor::from_vector(std::vector<float>(saved.size(), std::numeric_limits<float>::quiet_NaN()), v.shape()));
  return saved;
}
}  // namespace

TEST_CASE("trainer: a NaN loss stops with the update named and no later checkpoint", "[training][trainer][nan]") {
  const std::string dir = test::temp_dir("nan");
  test::write_corpora(dir, 60, 10, 7);
  TrainOptions o = test::tiny_options(dir);
  o.max_updates = 6;
  o.save_every = 1;
  o.valid_every = 0;
  Trainer t(o);
  t.set_update_hook([](ParameterStore& store, int64_t next) {
    if (next == 3) fill_nan(store);
  });
  CHECK_THROWS_WITH(t.run(false), Catch::Contains("loss is nan") && Catch::Contains("at update 3") &&
                                      Catch::Contains("skip_nan_batches"));
  const SafetensorsFile last = load_safetensors(o.run_dir + "/checkpoint.last.safetensors");
  CHECK(last.metadata.at("moe.update") == "2");
  for (const auto& [name, tensor] : last.tensors)
    if (tensor.dtype() == DType::f32)
      for (float x : tensor.to_vector<float>()) REQUIRE(std::isfinite(x));
  fs::remove_all(dir);
}

TEST_CASE("trainer: skip_nan_batches skips the batch and goes on", "[training][trainer][nan]") {
  const std::string dir = test::temp_dir("skipnan");
  test::write_corpora(dir, 60, 10, 9);
  TrainOptions o = test::tiny_options(dir);
  o.max_updates = 6;
  o.skip_nan_batches = true;
  Trainer t(o);
  int calls = 0;
  std::vector<float> saved;
  t.set_update_hook([&](ParameterStore& store, int64_t next) {
    ++calls;
    if (calls == 3) {
      CHECK(next == 3);
      saved = fill_nan(store);
    } else if (calls == 4) {
      CHECK(next == 3);  // the skipped attempt did not count as an update
      Tensor v = store.values();
      v.copy_from(Tensor::from_vector(saved, v.shape()));
    }
  });
  t.run(false);
  CHECK(calls == 7);
  CHECK(t.state().update == 6);
  for (float x : t.params().values().to_vector<float>()) REQUIRE(std::isfinite(x));

  TrainOptions always = o;
  always.run_dir = dir + "/always";
  Trainer t2(always);
  t2.set_update_hook([](ParameterStore& store, int64_t) { fill_nan(store); });
  CHECK_THROWS_WITH(t2.run(false), Catch::Contains("updates in a row were skipped"));
  fs::remove_all(dir);
}
