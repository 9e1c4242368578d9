// int8 inference without the f32 copies of its weights (models/int8_model.h, F32Copies): for every
// translation family (Transformer, MAE-7, MoA, MoE FFN, Switch with shared experts, LSTM with MoE layers),
// a model loaded from its checkpoint translates with its f32 weights released exactly as with them kept
// (beam 4, n-best 2: the same tokens and scores), and what is released is most of the weights' f32 bytes.
// A read of a released weight would stop the test (tensor/released_pages.h).
#include <catch2/catch.hpp>

#include "models/inference_weights.h"
#include "tiny_model.h"
#include "translator/translator.h"

using namespace moe;

namespace {
const std::vector<std::vector<int32_t>> kSources = {{4, 9, 13, 5}, {7}, {22, 21, 20, 19, 18, 17}, {6, 6, 6}};

struct Translation {
  std::vector<std::vector<Hypothesis>> hyps;
  size_t released = 0;
};

Translation translate(const std::string& path, F32Copies copies) {
  const LoadedCheckpoint ck = load_checkpoint(path, Device::cpu());
  const InferenceWeights int8(ck, Quantize::int8, Device::cpu(), copies);
  REQUIRE(int8.on());
  TranslatorOptions o;
  o.search.beam = 4;
  o.search.n_best = 2;
  return {Translator(*ck.model->encoder_decoder(), *ck.params, Device::cpu(), o).translate(kSources),
          int8.released_bytes()};
}

/// The f32 bytes of the weights quantized per column (all but the tables, gates and routers).
size_t per_column_bytes(const test::TinyModel& m) {
  size_t n = 0;
  for (const ParamEntry& e : m.params->entries())
    if (int8_role(e) == Int8Role::per_column) n += static_cast<size_t>(e.shape.numel()) * 4;
  return n;
}
}  // namespace

TEST_CASE("int8 with its f32 copies released translates as with them kept", "[translator][int8]") {
  const auto dir = test::temp_dir("int8-release");
  for (const auto& [name, cfg] : test::family_configs()) {
    SECTION(name) {
      const test::TinyModel m = test::model_of(cfg, 7);
      const std::string path = test::save_tiny(m, dir);
      const Translation kept = translate(path, F32Copies::keep);
      const Translation released = translate(path, F32Copies::release);
      CHECK(kept.released == 0);
      // Every weight's partial first and last pages stay: at most 2 pages of 4 KiB each.
      CHECK(released.released > per_column_bytes(m) / 2);
      REQUIRE(kept.hyps.size() == released.hyps.size());
      for (size_t s = 0; s < kept.hyps.size(); ++s) {
        REQUIRE(kept.hyps[s].size() == released.hyps[s].size());
        for (size_t h = 0; h < kept.hyps[s].size(); ++h) {
          CHECK(kept.hyps[s][h].tokens == released.hyps[s][h].tokens);
          CHECK(kept.hyps[s][h].score == released.hyps[s][h].score);
        }
      }
    }
  }
}
