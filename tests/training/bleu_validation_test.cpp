// BLEU validation: without a decoder it is refused clearly; with the translator's, a tiny model trained on a
// copy task decodes the valid set, the BLEU figure lands in metrics.jsonl, and the best checkpoint
// follows the highest BLEU.
#include "training/bleu_validation.h"

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "data/vocab.h"
#include "moe-train/bleu_decoder.h"
#include "training/trainer.h"
#include "training_test_util.h"

using namespace moe;
namespace fs = std::filesystem;

TEST_CASE("bleu validation: decodes the valid set and scores it", "[training][bleu]") {
  const std::string dir = test::temp_dir("bleu");
  test::write_corpora(dir, 200, 20, 11);
  TrainOptions o = test::tiny_options(dir);
  o.valid.metric = ValidMetric::bleu;
  o.valid.bleu = true;
  o.valid.decoding.search.beam = 2;
  o.max_updates = 8;
  // Without a decoder (training alone does not depend on the translator) BLEU validation is refused.
  CHECK_THROWS_WITH(Trainer(o).run(false), Catch::Contains("BLEU validation") && Catch::Contains("no decoder"));
  Trainer trainer(o);
  trainer.set_bleu_decoder(translator_bleu_decoder(o.valid));
  trainer.run(false);
  std::ifstream in(o.run_dir + "/metrics.jsonl");
  int valid_lines = 0;
  for (std::string line; std::getline(in, line);) {
    const YAML::Node n = YAML::Load(line);
    if (n["type"].as<std::string>() != "valid") continue;
    ++valid_lines;
    REQUIRE(n["bleu"]);
    CHECK(n["bleu"].as<double>() >= 0);
    CHECK(n["bleu"].as<double>() <= 100);
  }
  CHECK(valid_lines == 2);  // updates 4 and 8
  CHECK(fs::exists(o.run_dir + "/checkpoint.best.safetensors"));

  // The validator on its own: the hypotheses come back one per reference line.
  const auto vocab = data::load_vocab(dir + "/vocab.txt");
  ValidOptions v = o.valid;
  v.bleu_lines = 5;
  const BleuValidator bleu(dir + "/valid.src", dir + "/valid.tgt", *vocab, v, translator_bleu_decoder(v));
  CHECK(bleu.sentences() == 5);
  fs::remove_all(dir);
}
