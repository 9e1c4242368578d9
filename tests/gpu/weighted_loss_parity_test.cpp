// CPU-vs-CUDA parity of data weighting's loss (models/target_loss.h, LmBatch::weights): the summed loss and its
// gradients of a tiny Transformer over a batch whose target tokens carry weights ([B, T] uploaded with the batch,
// gathered at the real targets on the device), and of tiny causal LMs (a full softmax and an adaptive one, whose
// weights are multiplied on the host's row selection) over an LM batch with weights, f32, on the emulator and on a
// GPU.
#include <catch2/catch.hpp>
#include <cmath>

#include "data/batch_upload.h"
#include "models/model_registry.h"
#include "support/parity.h"

using namespace moe;

namespace {

struct Result {
  double loss = 0;
  std::vector<double> grads;
};

/// Weights 0.25 (i mod 7) at the scored targets of `mask`, 0 at the padding.
Tensor weights_for(const Tensor& mask) {
  const std::vector<float> m = mask.to_vector<float>();
  std::vector<float> w(m.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = m[i] != 0 ? 0.25f * static_cast<float>(i % 7) : 0.f;
  return Tensor::from_vector(w, mask.shape());
}

/// The loss `loss_of(model, builder, batch, label smoothing)` of the model of `cfg` over `batch` moved to `device`,
/// and its gradients.
template <class B, class Loss>
Result loss_on(Device device, const char* cfg, const B& batch, Loss loss_of) {
  const std::unique_ptr<Model> model = create_model(YAML::Load(cfg));
  ParameterStore store(device, 11);
  data::BatchUploader uploader(device);
  const B on_device = uploader.upload(batch);
  {
    Graph declare(device, &store, GraphOptions{.training = false});
    loss_of(*model, Builder(declare), on_device, 0.f);
  }
  store.allocate();
  Graph g(device, &store, GraphOptions{.training = true});
  const Expr loss = loss_of(*model, Builder(g), on_device, 0.1f);
  store.zero_grads();
  g.backward(loss);
  return {loss.val().item(), store.grads().to_vector<double>()};
}

void check_parity(const Result& cpu, const Result& gpu) {
  CHECK(cpu.loss > 0);
  CHECK(gpu.loss == Approx(cpu.loss).epsilon(1e-4));
  REQUIRE(gpu.grads.size() == cpu.grads.size());
  CHECK(test::rel_error(gpu.grads, cpu.grads) < 1e-4);
}

}  // namespace

TEST_CASE("weighted translation loss parity", "[gpu][weights]") {
  const char* cfg =
      "{type: transformer, d_model: 16, ffn_dim: 32, heads: 2, enc_layers: 1, dec_layers: 1, "
      "dropout: 0.0, max_positions: 16, src_vocab: 24, tgt_vocab: 24}";
  const std::vector<int32_t> x0 = {4, 9, 13, 5}, x1 = {7, 8}, y0 = {8, 6, 11}, y1 = {15, 16, 17, 18, 19};
  data::Batch batch = data::make_batch({x0, x1}, {y0, y1}, {0, 1}, 0, 2, 3);
  batch.tgt_weights = weights_for(batch.tgt_mask);
  const auto loss = [](const Model& m, const Builder& b, const data::Batch& x, float ls) { return m.loss(b, x, ls); };
  check_parity(loss_on(Device::cpu(), cfg, batch, loss), loss_on(Device::cuda(0), cfg, batch, loss));
}

TEST_CASE("weighted language-model loss parity", "[gpu][weights][lm]") {
  data::LmBatch batch = data::make_lm_batch({{3, 4, 9, 17, 21}, {3, 12, 20, 5}}, {{4, 9, 17, 21, 3}, {12, 20, 5, 3}},
                                            {{1, 1, 1, 1, 1}, {1, 1, 1, 1}}, {0, 1}, 0);
  batch.weights = weights_for(batch.mask);
  const auto loss = [](const Model& m, const Builder& b, const data::LmBatch& x, float ls) {
    return m.lm_loss(b, x, ls);
  };
  for (const char* cfg :
       {"{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 1, dropout: 0.0, max_positions: 16, "
        "vocab: 24}",
        "{type: transformer_lm, d_model: 16, ffn_dim: 32, heads: 2, layers: 1, dropout: 0.0, max_positions: 16, "
        "vocab: 24, tie_embeddings: false, adaptive_softmax_cutoffs: [8, 16]}"}) {
    SECTION(cfg) { check_parity(loss_on(Device::cpu(), cfg, batch, loss), loss_on(Device::cuda(0), cfg, batch, loss)); }
  }
}
