// train.ema_decay (training/parameter_ema.h) on a tiny Transformer (CPU): the smoothed parameters
// after N updates equal the closed form decay^N p_0 + (1 - decay) sum_k decay^(N-k) p_k of the
// parameters seen after each update; training itself is unchanged while validation scores the
// smoothed parameters; a run interrupted at update 6, or killed while it replaced checkpoint.last
// (the window the resume tests rebuild), resumes to the uninterrupted run's checkpoint.ema exactly;
// checkpoint.ema.safetensors translates with moe-translate; the key's range is checked.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "config/config.h"
#include "moe-translate/translate_cli.h"
#include "tensor/safetensors.h"
#include "training/trainer.h"
#include "training_test_util.h"

using namespace moe;
namespace fs = std::filesystem;

namespace {
constexpr double kDecay = 0.8;

/// The values of every tensor of a safetensors file, by name.
std::map<std::string, std::vector<float>> tensors_of(const std::string& path) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, t] : load_safetensors(path).tensors)
    if (t.dtype() == DType::f32) out[name] = t.to_vector<float>();
  return out;
}

TrainOptions ema_options(const std::string& dir) {
  TrainOptions o = test::tiny_options(dir);
  o.ema_decay = kDecay;
  o.max_updates = 12;
  o.log_every = 1;
  o.valid_every = o.save_every = 3;
  return o;
}
}  // namespace

TEST_CASE("train.ema_decay: the smoothed parameters follow the closed form", "[training][ema]") {
  const std::string dir = test::temp_dir("ema");
  test::write_corpora(dir, 200, 30, 3);
  TrainOptions o = ema_options(dir);
  o.run_dir = dir + "/ema";
  std::vector<std::map<std::string, std::vector<float>>> seen;  // p_0, p_1, ..., p_N by name
  auto snapshot = [&](const ParameterStore& s) {
    std::map<std::string, std::vector<float>> v;
    for (const ParamEntry& e : s.entries()) v[e.name] = s.value(s.find(e.name)).to_vector<float>();
    seen.push_back(std::move(v));
  };
  Trainer t(o);
  t.set_update_hook([&](ParameterStore& s, int64_t next) {
    if (next == 1) snapshot(s);
  });
  t.set_step_hook([&](const ParameterStore& s, UpdatePass) { snapshot(s); });
  t.run(false);
  const int64_t N = o.max_updates;
  REQUIRE(static_cast<int64_t>(seen.size()) == N + 1);
  const auto ema = tensors_of(o.run_dir + "/checkpoint.ema.safetensors");
  double worst = 0, moved = 0;
  for (const auto& [name, p0] : seen[0]) {
    REQUIRE(ema.count(name));
    for (size_t i = 0; i < p0.size(); ++i) {
      double closed = std::pow(kDecay, N) * p0[i];
      for (int64_t k = 1; k <= N; ++k) closed += (1 - kDecay) * std::pow(kDecay, N - k) * seen[k].at(name)[i];
      worst = std::max(worst, std::abs(ema.at(name)[i] - closed) / (1e-3 + std::abs(closed)));
      moved = std::max(moved, std::abs(static_cast<double>(seen[N].at(name)[i]) - ema.at(name)[i]));
    }
  }
  CHECK(worst < 1e-5);
  CHECK(moved > 1e-4);  // the smoothed parameters lag the trained ones

  // The same run without smoothing trains identically (bit for bit) and validates differently:
  // validation scores the smoothed parameters.
  TrainOptions plain = o;
  plain.ema_decay = 0;
  plain.run_dir = dir + "/plain";
  Trainer(plain).run(false);
  const auto a = test::read_metrics(o.run_dir), b = test::read_metrics(plain.run_dir);
  REQUIRE(a.size() == b.size());
  bool valid_differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].type == "train") CHECK(a[i].loss == b[i].loss);
    if (a[i].type == "valid") valid_differs |= a[i].loss != b[i].loss;
  }
  CHECK(valid_differs);
  CHECK_FALSE(fs::exists(plain.run_dir + "/checkpoint.ema.safetensors"));

  // checkpoint.ema.safetensors translates.
  TranslateCliOptions to;
  to.models = {o.run_dir + "/checkpoint.ema.safetensors"};
  to.decoding.device = Device::cpu();
  to.quiet = true;
  to.decoding.search.max_len_b = 5;
  std::istringstream in("w1 w2 w3\nw4 w5\n");
  std::ostringstream out, err;
  run_translate(to, in, out, err);
  const std::string text = out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);
  fs::remove_all(dir);
}

TEST_CASE("train.ema_decay: interrupted and killed runs resume the smoothed parameters exactly",
          "[training][ema][resume]") {
  const std::string dir = test::temp_dir("ema-resume");
  test::write_corpora(dir, 200, 30, 3);
  TrainOptions full = ema_options(dir);
  test::check_resume_reproduces(full, dir, 6);  // full in dir/full, stopped at 6 and resumed in dir/part
  const auto want = tensors_of(dir + "/full/checkpoint.ema.safetensors");
  CHECK(tensors_of(dir + "/part/checkpoint.ema.safetensors") == want);

  // Killed while replacing checkpoint.last (after moving the old state aside): checkpoint.last of
  // update 6, its state as checkpoint.last.state.previous, and checkpoint.ema of update 9.
  const std::string ckpt = "/checkpoint.last.safetensors", state = "/checkpoint.last.state.safetensors",
                    previous = "/checkpoint.last.state.previous.safetensors";
  TrainOptions part = full;
  part.run_dir = dir + "/killed";
  part.max_updates = 6;
  part.schedule.max_updates = full.max_updates;
  Trainer(part).run(false);
  fs::copy_file(part.run_dir + ckpt, dir + "/ckpt6");
  fs::copy_file(part.run_dir + state, dir + "/state6");
  part.max_updates = 9;
  Trainer(part).run(true);
  fs::copy_file(dir + "/ckpt6", part.run_dir + ckpt, fs::copy_options::overwrite_existing);
  fs::copy_file(dir + "/state6", part.run_dir + previous);
  fs::remove(part.run_dir + state);
  part.max_updates = 12;
  Trainer(part).run(true);
  test::check_same_metrics(test::read_metrics(dir + "/full"), test::read_metrics(part.run_dir));
  CHECK(tensors_of(part.run_dir + "/checkpoint.ema.safetensors") == want);

  // A run saved without smoothing resumes with it, starting from the resumed parameters.
  TrainOptions off = full;
  off.ema_decay = 0;
  off.run_dir = dir + "/off";
  off.max_updates = 6;
  Trainer(off).run(false);
  off.ema_decay = kDecay;
  off.max_updates = 7;
  Trainer(off).run(true);
  CHECK(fs::exists(off.run_dir + "/checkpoint.ema.safetensors"));
  fs::remove_all(dir);
}

TEST_CASE("train.ema_decay: key range", "[training][ema]") {
  config::Schema schema;
  register_train_keys(schema);
  auto with_decay = [&](const std::string& value) {
    config::Config c(schema);
    c.merge_file(std::string(MOE_SOURCE_DIR) + "/recipes/ci-tiny.yml");
    for (const char* k : {"data.train.src", "data.train.tgt"}) c.set_text(k, "none.txt");
    for (const char* k : {"data.vocab.src", "data.vocab.tgt"}) c.set_text(k, "none.spm");
    c.set_text("train.ema_decay", value);
    return TrainOptions::from_config(c);
  };
  CHECK(with_decay("0.9999").ema_decay == Approx(0.9999));
  CHECK(with_decay("0").ema_decay == 0);
  for (const char* bad : {"1", "-0.5", "1.5"}) {
    INFO(bad);
    CHECK_THROWS_WITH(with_decay(bad), Catch::Contains("train.ema_decay must be in [0, 1)"));
  }
}
