// CPU-vs-CUDA parity of data weighting's loss (models/target_loss.h): a tiny Transformer's summed loss over a
// batch whose target tokens carry weights ([B, T] uploaded with the batch, gathered at the real targets on the
// device) and its gradients, f32, on the emulator and on a GPU.
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

Result weighted_loss_on(Device device) {
  YAML::Node cfg = YAML::Load(
      "{type: transformer, d_model: 16, ffn_dim: 32, heads: 2, enc_layers: 1, dec_layers: 1, "
      "dropout: 0.0, max_positions: 16, src_vocab: 24, tgt_vocab: 24}");
  const std::unique_ptr<Model> model = create_model(cfg);
  ParameterStore store(device, 11);
  const std::vector<int32_t> x0 = {4, 9, 13, 5}, x1 = {7, 8}, y0 = {8, 6, 11}, y1 = {15, 16, 17, 18, 19};
  data::Batch batch = data::make_batch({x0, x1}, {y0, y1}, {0, 1}, 0, 2, 3);
  const std::vector<float> mask = batch.tgt_mask.to_vector<float>();
  std::vector<float> w(mask.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = mask[i] != 0 ? 0.25f * static_cast<float>(i % 7) : 0.f;
  batch.tgt_weights = Tensor::from_vector(w, batch.tgt_mask.shape());
  data::BatchUploader uploader(device);
  const data::Batch on_device = uploader.upload(batch);
  {
    Graph declare(device, &store, GraphOptions{.training = false});
    model->loss(Builder(declare), on_device, 0.f);
  }
  store.allocate();
  Graph g(device, &store, GraphOptions{.training = true});
  const Expr loss = model->loss(Builder(g), on_device, 0.1f);
  store.zero_grads();
  g.backward(loss);
  return {loss.val().item(), store.grads().to_vector<double>()};
}

}  // namespace

TEST_CASE("weighted translation loss parity", "[gpu][weights]") {
  const Result cpu = weighted_loss_on(Device::cpu()), gpu = weighted_loss_on(Device::cuda(0));
  CHECK(cpu.loss > 0);
  CHECK(gpu.loss == Approx(cpu.loss).epsilon(1e-4));
  REQUIRE(gpu.grads.size() == cpu.grads.size());
  CHECK(test::rel_error(gpu.grads, cpu.grads) < 1e-4);
}
