// Language-model training through moe-train's Trainer (CPU): a Transformer LM on a slice of the
// WikiText-103 sample lowers its loss and its best checkpoint scores, through moe-score's
// lm_perplexity, exactly the logged validation loss; an interrupted and resumed LM run logs the
// losses of an uninterrupted one; an LSTM LM with a mixture-of-experts layer and a masked LM
// (transformer_mlm, <mask> appended to the vocabulary) train on a synthetic Markov text; the batch's
// scored tokens reach the aux losses through the builder flag "batch.tgt_tokens".
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "graph/graph.h"
#include "models/checkpoint.h"
#include "models/model_registry.h"
#include "training/lm_task.h"
#include "training/trainer.h"
#include "training_test_util.h"
#include "translator/lm_perplexity.h"

using namespace moe;
namespace fs = std::filesystem;

namespace {
/// The first `n` lines of `from` into `to`; false when `from` is missing.
bool copy_lines(const std::string& from, const std::string& to, int n) {
  std::ifstream in(from);
  if (!in) return false;
  std::ofstream out(to);
  std::string line;
  for (int i = 0; i < n && std::getline(in, line); ++i) out << line << '\n';
  return true;
}

/// A finished run's metrics: training and validation lines, and the mean training loss of the first
/// and of the last `n` logged updates.
struct Curves {
  std::vector<test::MetricsLine> train, valid;
  double first = 0, last = 0;
};

Curves train_and_read(const TrainOptions& o, size_t n) {
  Trainer(o).run(false);
  Curves c;
  for (const auto& l : test::read_metrics(o.run_dir)) (l.type == "train" ? c.train : c.valid).push_back(l);
  REQUIRE(c.train.size() >= n);
  for (size_t i = 0; i < n; ++i) {
    c.first += c.train[i].loss / static_cast<double>(n);
    c.last += c.train[c.train.size() - 1 - i].loss / static_cast<double>(n);
  }
  return c;
}
}  // namespace

TEST_CASE("lm trainer: a Transformer LM on the WikiText-103 sample lowers its loss", "[training][lm]") {
  const std::string sample = std::string(MOE_SHARED_DATA) + "/wikitext-103-sample";
  const std::string dir = test::temp_dir("lm-wiki");
  if (!copy_lines(sample + "/wiki.train.tokens", dir + "/train.txt", 600) ||
      !copy_lines(sample + "/wiki.valid.tokens", dir + "/valid.txt", 80)) {
    WARN("no WikiText-103 sample in " << sample << ": test skipped");
    return;
  }
  TrainOptions o = test::tiny_lm_options(dir);
  o.data.vocab_max_words = 1000;
  o.data.tokens_per_sample = 32;
  o.model = YAML::Load("{type: transformer_lm, d_model: 32, ffn_dim: 64, heads: 2, layers: 1, max_positions: 64}");
  o.max_tokens = 512;
  o.max_updates = 40;
  o.schedule = ScheduleOptions{LrScheduleKind::inverse_sqrt, 5e-3, 0, 10, 40};
  o.valid_every = 20;
  o.save_every = 20;
  o.valid.context = 32;
  o.valid.stride = 16;
  const Curves c = train_and_read(o, 3);
  REQUIRE(c.train.size() == 40);
  REQUIRE(c.valid.size() == 2);
  INFO("training loss " << c.first << " -> " << c.last << ", valid " << c.valid[0].loss << " -> " << c.valid[1].loss);
  CHECK(c.first > std::log(1004.) - 0.5);  // about uniform over the 1,004 entries at the start
  CHECK(c.last < c.first - 1.5);
  CHECK(c.valid[1].loss < c.valid[0].loss);

  // The best checkpoint carries the "lm" vocabulary and scores the logged validation loss.
  const LoadedCheckpoint ck = load_checkpoint(o.run_dir + "/checkpoint.best.safetensors", Device::cpu());
  const data::Vocab& vocab = ck.vocab("lm");
  CHECK(vocab.size() == 1004);
  std::vector<std::string> text;
  std::ifstream in(dir + "/valid.txt");
  for (std::string line; std::getline(in, line);) text.push_back(line);
  PerplexityOptions po;
  po.context = 32;
  po.stride = 16;
  po.batch_size = scoring_batch_tokens(o.valid.decoding) / 32;  // the validation's batches: the same sums
  const PerplexityResult r =
      lm_perplexity(*ck.model, *ck.params, Device::cpu(), lm_stream_of(text, vocab), po, vocab.eos_id());
  CHECK(r.nll / static_cast<double>(r.tokens) == Approx(c.valid[1].loss).epsilon(1e-9));
  fs::remove_all(dir);
}

TEST_CASE("lm trainer: an interrupted and resumed LM run logs the losses of an uninterrupted one",
          "[training][lm][resume]") {
  const std::string dir = test::temp_dir("lm-resume");
  test::write_lm_texts(dir, 200, 30, 3);
  TrainOptions full = test::tiny_lm_options(dir);
  full.max_updates = 12;
  full.update_freq = 2;  // accumulation and the data position inside an update
  full.valid_every = 3;
  full.save_every = 3;
  test::check_resume_reproduces(full, dir, 6);
  fs::remove_all(dir);
}

TEST_CASE("lm trainer: an LSTM LM with a mixture-of-experts layer trains", "[training][lm][lstm]") {
  const std::string dir = test::temp_dir("lm-lstm");
  test::write_lm_texts(dir, 300, 30, 5);
  TrainOptions o = test::tiny_lm_options(dir);
  o.model = YAML::Load(
      "{type: lstm_lm, embed_dim: 16, hidden: 16, layers: 2, dropout: 0.0, moe_after: [0], "
      "moe: {type: moe, experts: 4, k: 2, hidden: 16, w_importance: 0.1, w_load: 0.1}}");
  o.max_updates = 100;
  o.schedule.max_updates = 100;
  o.valid_every = 50;
  o.save_every = 0;
  const Curves c = train_and_read(o, 3);
  REQUIRE(c.train.size() == 100);
  REQUIRE(c.valid.size() == 2);
  INFO("training loss " << c.first << " -> " << c.last << ", valid " << c.valid[0].loss << " -> " << c.valid[1].loss);
  CHECK(c.last < c.first - 1.0);
  CHECK(c.valid[1].loss < std::log(24.));  // below the unigram entropy of the 24 words: it uses the history
  fs::remove_all(dir);
}

TEST_CASE("lm trainer: a masked LM trains with <mask> appended to the vocabulary", "[training][lm][mlm]") {
  const std::string dir = test::temp_dir("lm-mlm");
  test::write_lm_texts(dir, 4000, 40, 7);
  TrainOptions o = test::tiny_lm_options(dir);
  o.task = TrainTaskKind::masked_lm;
  o.model = YAML::Load(
      "{type: transformer_mlm, d_model: 32, ffn_dim: 64, heads: 2, layers: 2, pre_norm: true, dropout: 0.0, "
      "scale_embeddings: false, max_positions: 64}");
  o.data.mlm.mask_prob = 0.3;  // more targets per batch: the neighbours' use is learnt sooner
  o.max_tokens = 1024;         // 64 blocks, about 300 masked targets per batch
  o.max_updates = 400;
  o.schedule.max_updates = 400;
  o.log_every = 10;
  o.valid_every = 200;
  o.save_every = 0;
  const Curves c = train_and_read(o, 3);
  REQUIRE(c.train.size() == 40);
  REQUIRE(c.valid.size() == 2);
  INFO("training loss " << c.first << " -> " << c.last << ", valid " << c.valid[0].loss << " -> " << c.valid[1].loss);
  CHECK(c.first > std::log(24.) - 0.3);  // the masked words are near uniform at the start
  CHECK(c.last < c.first - 0.7);
  CHECK(c.valid[1].loss < c.valid[0].loss);
  CHECK(c.valid[1].loss < std::log(24.) - 0.5);  // it predicts a masked word from its neighbours
  const LoadedCheckpoint ck = load_checkpoint(o.run_dir + "/checkpoint.last.safetensors", Device::cpu());
  CHECK(ck.model->type() == "transformer_mlm");
  CHECK(ck.model->config_yaml()["vocab"].as<int64_t>() == ck.vocab("lm").size() + 1);  // + <mask>
  // moe-score ppl refuses a masked LM (it would see the tokens it predicts).
  CHECK_THROWS_WITH(lm_perplexity(*ck.model, *ck.params, Device::cpu(), {5, 6, 7}, PerplexityOptions{}),
                    Catch::Contains("masked language model"));
  fs::remove_all(dir);
}

TEST_CASE("lm trainer: an LM batch's scored tokens reach the aux losses", "[training][lm][aux]") {
  const std::string dir = test::temp_dir("lm-aux");
  test::write_lm_text(dir, "train", 50, 9);
  TrainOptions o = test::tiny_lm_options(dir);
  o.data.valid_text.clear();
  o.model = YAML::Load(
      "{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 1, max_positions: 64, "
      "ffn: {type: moe, experts: 4, k: 2, w_importance: 0.1, w_load: 0.1}}");
  data::BatchUploader uploader(Device::cpu());
  LmTask task(o, uploader);
  auto model = create_model(task.prepare(o.model));
  task.attach(*model);
  ParameterStore store(Device::cpu(), 1);
  {
    Graph g(Device::cpu(), &store, GraphOptions{.training = true});
    task.declare(*model, Builder(g));
  }
  store.allocate();
  task.load_data();
  CHECK_FALSE(task.has_validation());
  task.start();
  const TrainTask::Item item = task.next();
  REQUIRE(item.batch);
  CHECK(item.batch->size() == 8);  // max_tokens 128 / 16 tokens per block
  double scored = 0;
  for (float m : std::get<data::LmBatch>(item.batch->data).mask.to_vector<float>()) scored += m;
  CHECK(item.batch->tokens() == static_cast<int64_t>(scored));
  CHECK(item.batch->tokens() > 100);
  Graph g(Device::cpu(), &store, GraphOptions{.training = true});
  Builder b(g);
  const Expr loss = task.loss(*model, b, *item.batch, 0.f);
  CHECK(b.context().target_tokens == item.batch->tokens());
  CHECK(b.aux_losses().size() == 2);  // importance and load of the MoE layer
  g.forward();
  CHECK(std::isfinite(loss.val().item()));
  // The trainer with this model: loss and aux losses together train.
  o.run_dir = dir + "/run";
  o.max_updates = 20;
  o.save_every = 0;
  const Curves c = train_and_read(o, 3);
  REQUIRE(c.train.size() == 20);
  CHECK(c.last < c.first - 0.5);
  fs::remove_all(dir);
}

TEST_CASE("lm trainer: task and model must agree", "[training][lm]") {
  const std::string dir = test::temp_dir("lm-mismatch");
  test::write_lm_text(dir, "train", 20, 11);
  TrainOptions o = test::tiny_lm_options(dir);
  o.task = TrainTaskKind::masked_lm;  // a transformer_lm is not a masked LM
  CHECK_THROWS_WITH(Trainer(o).run(false), Catch::Contains("transformer_lm") && Catch::Contains("masked"));
  TrainOptions long_blocks = test::tiny_lm_options(dir);
  long_blocks.data.tokens_per_sample = 100;  // model.max_positions 64
  CHECK_THROWS_WITH(Trainer(long_blocks).run(false),
                    Catch::Contains("data.tokens_per_sample") && Catch::Contains("max_positions"));
  TrainOptions missing = test::tiny_lm_options(dir);
  missing.data.train_text = dir + "/missing.txt";
  CHECK_THROWS_WITH(Trainer(missing).run(false), Catch::Contains("missing.txt"));
  fs::remove_all(dir);
}
