// Checkpoints: a model checkpoint round trip (parameters, architecture, embedded vocabulary), the
// training-state file round trip (counters, data state, optimizer buffers after real steps), state
// paths, and checkpoint averaging (moe-average) with its errors.
#include "models/checkpoint.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "data/vocab.h"
#include "graph/graph.h"
#include "models/inference_weights.h"
#include "models/model_registry.h"
#include "tensor/safetensors.h"
#include "training/average.h"
#include "training/optimizer.h"
#include "training/training_state.h"
#include "training_test_util.h"

using namespace moe;
namespace fs = std::filesystem;

namespace {
struct TinyModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<ParameterStore> store;
  data::Batch batch;
};

TinyModel tiny_model(uint64_t seed) {
  TinyModel t;
  t.model =
      create_model(YAML::Load("{type: transformer, src_vocab: 10, tgt_vocab: 10, d_model: 8, ffn_dim: 16, "
                              "heads: 2, enc_layers: 1, dec_layers: 1, dropout: 0, max_positions: 16}"));
  t.store = std::make_unique<ParameterStore>(Device::cpu(), seed);
  const std::vector<int32_t> s = {4, 5, 6}, y = {7, 8};
  t.batch = data::make_batch({std::span<const int32_t>(s)}, {std::span<const int32_t>(y)}, {0}, 0, 2, 3);
  return t;
}

/// One forward/backward of the tiny model and an optimizer step.
void train_step(TinyModel& t, Optimizer& opt) {
  Graph g(Device::cpu(), t.store.get());
  Builder b(g);
  Expr loss = t.model->loss(b, t.batch, 0.f);
  g.forward();
  t.store->zero_grads();
  g.backward(loss);
  opt.step(*t.store, 1e-2);
}

std::vector<float> all_values(const ParameterStore& s) {
  std::vector<float> out;
  for (const auto& e : s.entries()) {
    const auto v = s.value(s.find(e.name)).to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}
}  // namespace

TEST_CASE("checkpoint: parameters, architecture and vocabulary round trip", "[training][checkpoint]") {
  const std::string dir = test::temp_dir("ckpt");
  std::ofstream(dir + "/vocab.txt") << "a 5\nb 4\nc 3\nd 2\ne 1\nf 1\n";
  TinyModel t = tiny_model(3);
  auto opt = Optimizer::create("adam");
  train_step(t, *opt);
  const std::string path = dir + "/checkpoint.last.safetensors";
  save_checkpoint(path, *t.model, *t.store,
                  {VocabFile::read("src", dir + "/vocab.txt"), VocabFile::read("tgt", dir + "/vocab.txt")},
                  {{"moe.update", "1"}});
  const LoadedCheckpoint c = load_checkpoint(path, Device::cpu());
  CHECK(YAML::Dump(c.model->config_yaml()) == YAML::Dump(t.model->config_yaml()));
  CHECK(c.metadata.at("moe.update") == "1");
  CHECK(c.vocab("src").size() == 10);  // 4 reserved + 6 words
  CHECK(c.vocab("tgt").piece(4) == "a");
  REQUIRE(c.params->entries().size() == t.store->entries().size());
  for (const auto& e : t.store->entries()) {
    INFO(e.name);
    CHECK(c.params->value(e.name).to_vector<float>() == t.store->value(e.name).to_vector<float>());
  }
  // Into an existing store (as --resume does), then a mismatching shape.
  TinyModel u = tiny_model(99);
  {
    Graph g(Device::cpu(), u.store.get());
    Builder b(g);
    u.model->loss(b, u.batch, 0.f);
  }
  u.store->allocate();
  CHECK(all_values(*u.store) != all_values(*t.store));
  load_parameters_into(path, *u.store);
  CHECK(all_values(*u.store) == all_values(*t.store));
  fs::remove_all(dir);
}

TEST_CASE("training state: counters, data position and optimizer buffers round trip", "[training][checkpoint]") {
  const std::string dir = test::temp_dir("state");
  CHECK(state_path_for("run/checkpoint.last.safetensors") == "run/checkpoint.last.state.safetensors");
  CHECK(state_path_for("run/model.bin") == "run/model.bin.state");
  TinyModel t = tiny_model(5);
  auto opt = Optimizer::create("adamw");
  train_step(t, *opt);
  train_step(t, *opt);
  TrainingState s;
  s.update = 2;
  s.epoch = 1;
  s.batches = 5;
  s.seed = 42;
  s.data_state = R"({"epoch":1,"window":0,"batch":3,"seed":42,"config":123})";
  s.loss_scale = 16384;
  s.loss_scale_clean = 17;
  s.best_metric = 1.0 / 3.0;
  s.best_update = 2;
  s.bad_validations = 1;
  s.window_loss = 12.345678901234567;
  s.window_tokens = 99;
  s.optimizer = opt->state();
  save_training_state(dir + "/x.state.safetensors", s);
  const TrainingState r = load_training_state(dir + "/x.state.safetensors");
  CHECK(r.update == 2);
  CHECK(r.epoch == 1);
  CHECK(r.batches == 5);
  CHECK(r.seed == 42);
  CHECK(r.data_state == s.data_state);
  CHECK(r.loss_scale == 16384);
  CHECK(r.loss_scale_clean == 17);
  CHECK(r.best_metric == s.best_metric);  // exact
  CHECK(r.window_loss == s.window_loss);
  CHECK(r.window_tokens == 99);
  REQUIRE(r.optimizer.size() == s.optimizer.size());
  CHECK(r.optimizer.at("step").item() == 2);
  CHECK(r.optimizer.at("adam.v").to_vector<float>() == s.optimizer.at("adam.v").to_vector<float>());
  // A restored optimizer continues exactly like the original.
  auto restored = Optimizer::create("adamw");
  restored->load_state(r.optimizer);
  TinyModel t2 = tiny_model(5);
  {
    Graph g(Device::cpu(), t2.store.get());
    Builder b(g);
    t2.model->loss(b, t2.batch, 0.f);
  }
  t2.store->allocate();
  Tensor dst = t2.store->values();
  dst.copy_from(t.store->values());
  train_step(t, *opt);
  train_step(t2, *restored);
  CHECK(all_values(*t.store) == all_values(*t2.store));

  TrainingState nan_best;
  save_training_state(dir + "/y.state.safetensors", nan_best);
  CHECK(std::isnan(load_training_state(dir + "/y.state.safetensors").best_metric));
  save_safetensors(dir + "/z.safetensors", {}, {{"update", "1"}});
  CHECK_THROWS_WITH(load_training_state(dir + "/z.safetensors"), Catch::Contains("not a moe training state"));
  fs::remove_all(dir);
}

TEST_CASE("average: the element-wise mean of checkpoints", "[training][average]") {
  const std::string dir = test::temp_dir("average");
  std::ofstream(dir + "/vocab.txt") << "a 1\nb 1\nc 1\nd 1\ne 1\nf 1\n";
  const std::vector<VocabFile> vocabs = {VocabFile::read("src", dir + "/vocab.txt"),
                                         VocabFile::read("tgt", dir + "/vocab.txt")};
  std::vector<std::vector<float>> values;
  TinyModel t = tiny_model(1);
  auto opt = Optimizer::create("sgd");
  for (int k = 0; k < 3; ++k) {
    train_step(t, *opt);
    values.push_back(all_values(*t.store));
    save_checkpoint(dir + "/checkpoint." + std::to_string(10 * (k + 1)) + ".safetensors", *t.model, *t.store, vocabs);
  }
  const auto last2 = last_numbered_checkpoints(dir, 2);
  REQUIRE(last2.size() == 2);
  CHECK(fs::path(last2[0]).filename() == "checkpoint.20.safetensors");
  CHECK(fs::path(last2[1]).filename() == "checkpoint.30.safetensors");
  average_checkpoints(last2, dir + "/avg.safetensors");
  const LoadedCheckpoint c = load_checkpoint(dir + "/avg.safetensors", Device::cpu());
  std::vector<float> got = all_values(*c.params);
  REQUIRE(got.size() == values[1].size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == Approx((static_cast<double>(values[1][i]) + values[2][i]) / 2).epsilon(1e-6));
  CHECK(c.vocab("src").size() == 10);
  CHECK(c.metadata.at("moe.averaged").find("checkpoint.30") != std::string::npos);

  CHECK_THROWS_WITH(last_numbered_checkpoints(dir, 5), Catch::Contains("holds 3 numbered"));
  CHECK_THROWS_WITH(average_checkpoints({}, dir + "/x.safetensors"), Catch::Contains("no input"));
  TinyModel other = tiny_model(1);
  other.model =
      create_model(YAML::Load("{type: transformer, src_vocab: 10, tgt_vocab: 10, d_model: 8, ffn_dim: 8, "
                              "heads: 2, enc_layers: 1, dec_layers: 1, max_positions: 16}"));
  auto opt2 = Optimizer::create("sgd");
  train_step(other, *opt2);
  save_checkpoint(dir + "/other.safetensors", *other.model, *other.store, vocabs);
  CHECK_THROWS_WITH(average_checkpoints({last2[0], dir + "/other.safetensors"}, dir + "/x.safetensors"),
                    Catch::Contains("different model"));
  fs::remove_all(dir);
}

namespace {
double loss_of(const LoadedCheckpoint& c, const data::Batch& batch) {
  Graph g(Device::cpu(), c.params.get());
  Builder b(g);
  Expr loss = c.model->loss(b, batch, 0.f);
  g.forward();
  return loss.val().to_vector<double>()[0];
}
}  // namespace

TEST_CASE("int8: a pre-quantized checkpoint equals quantizing on load", "[training][checkpoint][int8]") {
  const std::string dir = test::temp_dir("int8");
  std::ofstream(dir + "/vocab.txt") << "a 1\nb 1\nc 1\nd 1\ne 1\nf 1\n";
  const std::vector<VocabFile> vocabs = {VocabFile::read("src", dir + "/vocab.txt"),
                                         VocabFile::read("tgt", dir + "/vocab.txt")};
  TinyModel t = tiny_model(3);
  auto opt = Optimizer::create("sgd");
  train_step(t, *opt);
  save_checkpoint(dir + "/f32.safetensors", *t.model, *t.store, vocabs);
  save_checkpoint(dir + "/int8.safetensors", *t.model, *t.store, vocabs, {}, Quantize::int8);
  const LoadedCheckpoint f32 = load_checkpoint(dir + "/f32.safetensors", Device::cpu());
  const LoadedCheckpoint pre = load_checkpoint(dir + "/int8.safetensors", Device::cpu());
  CHECK(pre.metadata.at("moe.quantize") == "int8");
  CHECK(f32.int8.empty());
  CHECK(pre.int8.count("encoder.l0.ffn.fc1.w") == 1);
  CHECK(pre.int8.count("embed.src") == 1);  // tables too, per row (the lookups read q * scale)
  CHECK(pre.int8.at("embed.src").per_row);
  CHECK(fs::file_size(dir + "/int8.safetensors") < fs::file_size(dir + "/f32.safetensors"));
  const SafetensorsFile file = load_safetensors(dir + "/int8.safetensors");
  for (const auto& e : f32.params->entries()) {
    INFO(e.name);
    CHECK(file.has(e.name) == (int8_role(e) == Int8Role::keep_f32));  // no f32 copy of a quantized weight
  }
  // the same int8 weights either way, hence the same products and output
  const auto on_load = quantize_model(*f32.params, f32.int8), from_file = quantize_model(*pre.params, pre.int8);
  REQUIRE(on_load->size() == from_file->size());
  for (const auto& e : f32.params->entries()) {
    const Int8Matrix* a = on_load->find(f32.params->value(e.name));
    const Int8Matrix* b = from_file->find(pre.params->value(e.name));
    REQUIRE((a == nullptr) == (b == nullptr));
    if (a) CHECK((a->q == b->q && a->scale == b->scale && a->per_row == b->per_row));
    CHECK((a != nullptr) == (int8_role(e) != Int8Role::keep_f32));
  }
  const double f32_loss = loss_of(f32, t.batch);
  double int8_loss = 0;
  {
    const InferenceWeights on(f32, Quantize::int8, Device::cpu());
    REQUIRE(on.on());
    int8_loss = loss_of(f32, t.batch);
    // quantizing on load puts the tables' q * scale into the store, as the pre-quantized file does
    CHECK(f32.params->value("embed.src").to_vector<float>() == pre.params->value("embed.src").to_vector<float>());
  }
  {
    const InferenceWeights on(pre, Quantize::none, Device::cpu());  // pre-quantized: int8 whatever the option
    REQUIRE(on.on());
    CHECK(loss_of(pre, t.batch) == int8_loss);
  }
  CHECK(int8_loss != f32_loss);  // the int8 path ran
  CHECK(int8_loss == Approx(f32_loss).epsilon(0.02));
  CHECK_THROWS_WITH(InferenceWeights(f32, Quantize::int8, Device::cuda(0)), Catch::Contains("CPU only"));
  CHECK_THROWS_WITH(average_checkpoints({dir + "/int8.safetensors"}, dir + "/x.safetensors"),
                    Catch::Contains("pre-quantized"));
  fs::remove_all(dir);
}

// Files written before int8 weights took 7 bits (ops/int8_gemm.h: kInt8WeightMax) hold bytes up to 127: they are
// requantized from their values q * scale on load, as quantizing those values would; 7-bit files are read as they are.
TEST_CASE("int8: a checkpoint's 8-bit weights are requantized to 7 bits", "[training][checkpoint][int8]") {
  const std::vector<int8_t> old_q = {127, -3, 64, 0, -127, 5};  // [K 3, N 2], scales per column
  std::vector<uint8_t> bytes(old_q.size());
  std::memcpy(bytes.data(), old_q.data(), bytes.size());
  const Tensor scale = Tensor::from_vector(std::vector<float>{0.5f, 0.25f}, Shape{2});
  const auto [name, m] =
      read_int8_weight("old.safetensors", "l.w.int8", Tensor::from_vector(bytes, Shape{3, 2}), scale);
  CHECK(name == "l.w");
  Int8Matrix old;
  old.shape = Shape{3, 2};
  old.q = old_q;
  old.scale = {0.5f, 0.25f};
  const Int8Matrix want = quantize_int8(dequantize_int8(old), false);
  CHECK((m.q == want.q && m.scale == want.scale));
  for (int8_t v : m.q) CHECK(std::abs(int(v)) <= kInt8WeightMax);
  const auto [same_name, same] = read_int8_weight("new.safetensors", "l.w.int8",
                                                  Tensor::from_vector(std::vector<uint8_t>(6, 63), Shape{3, 2}), scale);
  CHECK((same.q == std::vector<int8_t>(6, 63) && same.scale == old.scale));
}

TEST_CASE("int8: which parameters are quantized, and how", "[training][checkpoint][int8]") {
  auto role = [](const std::string& name, const Shape& s, bool state = false) {
    ParamEntry e;
    e.name = name;
    e.shape = s;
    e.state = state;
    return int8_role(e);
  };
  CHECK(role("encoder.l0.self_attn.q.w", Shape{8, 8}) == Int8Role::per_column);
  CHECK(role("decoder.l1.ffn.moe.expert.w0", Shape{4, 8, 16}) == Int8Role::per_column);
  CHECK(role("embed.tgt", Shape{10, 8}) == Int8Role::per_row);
  CHECK(role("out.w", Shape{10, 8}) == Int8Role::per_row);
  CHECK(role("decoder.l1.ffn.moe.gate.w", Shape{8, 4}) == Int8Role::keep_f32);
  CHECK(role("encoder.l0.self_attn.gate.l1.w", Shape{8, 256}) == Int8Role::keep_f32);
  CHECK(role("encoder.l0.attn.router.w", Shape{8, 4}) == Int8Role::keep_f32);
  CHECK(role("encoder.l0.ffn.fc1.b", Shape{16}) == Int8Role::keep_f32);
  CHECK(role("encoder.l0.bn.mean", Shape{8, 8}, true) == Int8Role::keep_f32);
}
