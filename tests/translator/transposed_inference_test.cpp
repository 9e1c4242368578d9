// f32 CPU inference with the dense weights held transposed (models/inference_weights.h, ops/transposed_weights.h):
// for every translation family (Transformer, MAE-7, MoA, MoE FFN, Switch with shared experts, LSTM with MoE
// layers) a model translates as with its weights as stored (beam 4, n-best 2: the same tokens, scores within
// rounding), with the originals released (a read of one would stop the test); the OpenBLAS backend keeps the
// stored layout.
#include <catch2/catch.hpp>

#include "models/inference_weights.h"
#include "ops/cpu_gemm.h"
#include "tiny_model.h"
#include "translator/translator.h"

using namespace moe;

namespace {
const std::vector<std::vector<int32_t>> kSources = {{4, 9, 13, 5}, {7}, {22, 21, 20, 19, 18, 17}, {6, 6, 6}};

std::vector<std::vector<Hypothesis>> translate(const std::string& path, F32Layout layout, bool* transposed,
                                               size_t* released) {
  const LoadedCheckpoint ck = load_checkpoint(path, Device::cpu());
  const InferenceWeights w(ck, Quantize::none, Device::cpu(), F32Copies::release, layout);
  CHECK_FALSE(w.on());
  *transposed = w.transposed();
  *released = w.released_bytes();
  TranslatorOptions o;
  o.search.beam = 4;
  o.search.n_best = 2;
  return Translator(*ck.model->encoder_decoder(), *ck.params, Device::cpu(), o).translate(kSources);
}
}  // namespace

TEST_CASE("f32 inference with transposed weights translates as with the stored ones", "[translator][transposed]") {
  const auto dir = test::temp_dir("transposed-inference");
  const CpuGemmBackend backend = cpu_gemm_backend();
  for (const auto& [name, cfg] : test::family_configs()) {
    SECTION(name) {
      const test::TinyModel m = test::model_of(cfg, 7);
      const std::string path = test::save_tiny(m, dir);
      size_t dense_bytes = 0;  // the 2-D per-column weights, the ones held transposed
      for (const ParamEntry& e : m.params->entries())
        if (e.shape.ndim() == 2 && int8_role(e) == Int8Role::per_column) dense_bytes += size_t(e.shape.numel()) * 4;
      bool transposed = true;
      size_t released = 1;
      const auto stored = translate(path, F32Layout::stored, &transposed, &released);
      CHECK_FALSE(transposed);
      CHECK(released == 0);
      if (!onednn_built()) {  // OpenBLAS only: the stored layout whatever is asked
        translate(path, F32Layout::transposed, &transposed, &released);
        CHECK_FALSE(transposed);
        continue;
      }
      set_cpu_gemm_backend(CpuGemmBackend::openblas);
      translate(path, F32Layout::transposed, &transposed, &released);
      CHECK_FALSE(transposed);
      set_cpu_gemm_backend(CpuGemmBackend::by_rows);
      const auto swapped = translate(path, F32Layout::transposed, &transposed, &released);
      set_cpu_gemm_backend(backend);
      CHECK(transposed);
      CHECK(released > dense_bytes / 2);  // every weight's partial first and last pages stay
      REQUIRE(stored.size() == swapped.size());
      for (size_t s = 0; s < stored.size(); ++s) {
        REQUIRE(stored[s].size() == swapped[s].size());
        for (size_t h = 0; h < stored[s].size(); ++h) {
          CHECK(stored[s][h].tokens == swapped[s][h].tokens);
          CHECK(stored[s][h].score == Approx(swapped[s][h].score).margin(1e-4));
        }
      }
    }
  }
}
