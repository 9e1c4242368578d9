// The language-model recipes start: recipes/wikitext103-sample-lm.yml (Transformer LM),
// 1b-word-moe-4.yml (LSTM LM with a sparsely-gated MoE layer) and wikitext103-mlm-moa-8K8E128D.yml
// (masked LM with MoA attention) each run one update on the CPU with their own model, schedule and
// data keys, the data pointed at ../shared/data's samples, in f32 with one block per batch, no
// validation, no warm-up, and every file (vocabulary, token caches, checkpoints) in a temporary folder.
// Skipped (with a warning) when the shared data folder is missing.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "config/config.h"
#include "training/trainer.h"
#include "training_test_util.h"

using namespace moe;
namespace fs = std::filesystem;

namespace {
/// One CPU update of `recipe` on `text`; returns the logged training loss.
double start_recipe(const std::string& recipe, const std::string& text, const std::string& dir,
                    const std::string& vocab_type = "") {
  config::Schema schema;
  register_train_keys(schema);
  config::Config c(schema);
  c.merge_file(std::string(MOE_SOURCE_DIR) + "/recipes/" + recipe);
  c.set_text("run_dir", dir + "/run");
  c.set_text("data.train.text", text);
  c.set_text("data.valid.text", "");
  c.set_text("data.vocab.path", dir + "/vocab.words");
  if (!vocab_type.empty()) c.set_text("data.vocab.type", vocab_type);
  c.set_text("data.cache_dir", dir + "/cache");
  c.set_text("train.device", "cpu");
  c.set_text("train.dtype", "f32");
  c.set_text("train.max_updates", "1");
  c.set_text("train.warmup_updates", "0");  // linear / cosine schedules decay over max_updates
  c.set_text("train.update_freq", "1");
  c.set_text("train.max_tokens", std::to_string(c.get_int("data.tokens_per_sample")));
  c.set_text("train.log_every", "1");
  const TrainOptions o = TrainOptions::from_config(c);
  Trainer t(o);
  t.run(false);
  CHECK(t.state().update == 1);
  const auto lines = test::read_metrics(o.run_dir);
  REQUIRE(lines.size() == 1);
  return lines[0].loss;
}
}  // namespace

TEST_CASE("lm recipes start: one CPU update each", "[training][lm][recipes]") {
  const std::string shared = MOE_SHARED_DATA;
  const std::string wiki = shared + "/wikitext-103-sample/wiki.train.tokens";
  const std::string news = shared + "/1b-word-sample/news.en.heldout-00000-of-00050";
  if (!fs::exists(wiki) || !fs::exists(news)) {
    WARN("no WikiText-103 / 1B-word samples in " << shared << ": test skipped");
    return;
  }
  const std::string dir = test::temp_dir("lm-recipes");
  SECTION("wikitext103-sample-lm.yml") {
    const double loss = start_recipe("wikitext103-sample-lm.yml", wiki, dir);
    CHECK(loss == Approx(std::log(32489.)).margin(1.0));  // near uniform over the sample's words
  }
  SECTION("1b-word-moe-4.yml") { CHECK(std::isfinite(start_recipe("1b-word-moe-4.yml", news, dir))); }
  SECTION("wikitext103-mlm-moa-8K8E128D.yml, with a word vocabulary") {
    CHECK(std::isfinite(start_recipe("wikitext103-mlm-moa-8K8E128D.yml", wiki, dir, "word")));
  }
  fs::remove_all(dir);
}
