// model.*: one whole training update of a real model (time_update, model_step.h) on random token
// batches without padding, reported as median ms per update, target tokens/s and model TFLOP/s
// (model_train_flops: the GEMMs and attention cores of forward + backward). Full (GPU) shapes:
//   model.transformer_base      Transformer base (lib/models/transformer.h): 6+6 post-norm layers, d 512,
//                               FFN 2048, 8 heads, one shared 32k vocabulary with all embeddings tied,
//                               dropout 0.1, label smoothing 0.1; 256 pairs x 64 tokens per side (src x </s>,
//                               tgt <s> y / y </s>): 16384 target tokens. Adam (0.9, 0.98, eps 1e-8).
//   model.transformer_base_moe  the same with every FFN a sparse MoE (model.ffn {type: moe, experts: 8,
//                               k: 2}: experts of hidden 2048, noisy top-2 gating, auxiliary losses).
//   model.transformer_lm        the WikiText-103 sample LM (recipes/wikitext103-sample-lm.yml): 6 pre-norm
//                               layers, d 512, FFN 2048, 8 heads, tied embeddings, dropout 0.3, vocabulary
//                               32489 (the sample's word vocabulary), 32 blocks of 256: 8192 target tokens.
//                               Adam (0.9, 0.98, eps 1e-8, weight decay 0.01), no label smoothing.
// Small (CPU default) and tiny (tests) shapes keep the same structure at a few seconds / milliseconds.
// The same models in PyTorch: scripts/bench_torch_models.py. Covered by tests/bench/bench_test.cpp.
#include <algorithm>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/cases.h"
#include "bench/model_step.h"

namespace moe::bench {
namespace {
constexpr int32_t kPad = 0, kBos = 2, kEos = 3, kFirstWord = 4;  // ids 0-3 reserved, as in moe's vocabularies

struct Sizes {
  int64_t batch, len, d, ffn, vocab;
  int heads, layers;
};

/// `n` random word ids in [kFirstWord, vocab).
std::vector<int32_t> random_ids(std::mt19937& rng, int64_t n, int64_t vocab) {
  std::uniform_int_distribution<int32_t> word(kFirstWord, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = word(rng);
  return ids;
}

/// "44.1M" or "12.3k".
std::string count_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 1e6 ? "%.1fM" : "%.1fk", v >= 1e6 ? v / 1e6 : v / 1e3);
  return buf;
}

/// The model section keys both models share (ids 0-3 reserved).
YAML::Node model_yaml(const std::string& type, const Sizes& s, bool pre_norm, double dropout) {
  YAML::Node model;
  model["type"] = type;
  model["pad_id"] = kPad;
  model["bos_id"] = kBos;
  model["eos_id"] = kEos;
  model["d_model"] = s.d;
  model["ffn_dim"] = s.ffn;
  model["heads"] = s.heads;
  model["pre_norm"] = pre_norm;
  model["dropout"] = dropout;
  return model;
}

/// The FLOP sizes of `s`: an encoder-decoder with len tokens per side, or a decoder-only LM.
ModelShape model_shape(const Sizes& s, bool seq2seq) {
  ModelShape m{.batch = s.batch, .tgt_len = s.len, .d = s.d, .ffn = s.ffn, .vocab = s.vocab, .heads = s.heads};
  m.dec_layers = s.layers;
  if (seq2seq) {
    m.src_len = s.len;
    m.enc_layers = s.layers;
  }
  return m;
}

/// Times the updates and emits the row "update" (model FLOPs, target tokens, parameters and `what` in the note).
void time_and_emit(BenchContext& ctx, const std::string& shape, const ModelShape& m, const UpdateSpec& spec,
                   const BatchLossFn& loss, const std::string& what) {
  const UpdateTiming u = time_update(ctx, spec, loss);
  Row r{.label = "update", .shape = shape, .timing = u.timing};
  r.flops = model_train_flops(m);
  r.tokens = double(spec.tokens);
  r.note = count_text(double(u.params)) + " params; " + what;
  if (spec.comm && spec.comm->world() > 1) {  // per rank; the global batch is world times this one
    char buf[200];
    std::snprintf(buf, sizeof buf, "; %d ranks (%s): %.1f MB all-reduced per rank per update in %.1f ms, %.1f ms "
                  "of it after backward (overlap %.0f%%)", spec.comm->world(), spec.comm->backend(),
                  u.dp_bytes / 1e6, u.dp_comm_s * 1e3, u.dp_wait_s * 1e3,
                  u.dp_comm_s > 0 ? 100.0 * (1.0 - std::min(1.0, u.dp_wait_s / u.dp_comm_s)) : 0.0);
    r.note += buf;
  }
  ctx.emit(r);
}

void translation_case(BenchContext& ctx, int experts, dist::Communicator* comm = nullptr) {
  const Sizes s = ctx.pick(Sizes{256, 64, 512, 2048, 32000, 8, 6}, Sizes{16, 32, 128, 512, 2000, 4, 2},
                           Sizes{2, 8, 16, 32, 64, 2, 1});
  const int k = 2;
  YAML::Node model = model_yaml("transformer", s, false, 0.1);
  model["src_vocab"] = s.vocab;
  model["tgt_vocab"] = s.vocab;
  model["enc_layers"] = s.layers;
  model["dec_layers"] = s.layers;
  model["tie_embeddings"] = "all";
  model["max_positions"] = 1024;
  ModelShape shape = model_shape(s, true);
  if (experts > 0) {
    model["ffn"]["type"] = "moe";
    model["ffn"]["experts"] = experts;
    model["ffn"]["k"] = k;
    shape.experts = experts;
    shape.k = k;
  }
  // Rows of len - 1 words: src = x </s>, tgt_in = <s> y, tgt_out = y </s>, all of len tokens (no padding).
  std::mt19937 rng(7);
  std::vector<std::vector<int32_t>> src, tgt;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < s.batch; ++i) {
    src.push_back(random_ids(rng, s.len - 1, s.vocab));
    tgt.push_back(random_ids(rng, s.len - 1, s.vocab));
    ids.push_back(i);
  }
  const std::vector<std::span<const int32_t>> src_spans(src.begin(), src.end()), tgt_spans(tgt.begin(), tgt.end());
  const data::Batch batch = data::make_batch(src_spans, tgt_spans, ids, kPad, kBos, kEos);
  MOE_CHECK(batch.tgt_tokens == s.batch * s.len, "model case: expected an unpadded batch of ", s.batch, " x ", s.len);
  const UpdateSpec spec{.model = model,
                        .tokens = batch.tgt_tokens,
                        .optim = {.beta1 = 0.9, .beta2 = 0.98, .eps = 1e-8},
                        .comm = comm};
  const std::string layers = std::to_string(s.layers) + "+" + std::to_string(s.layers);
  time_and_emit(
      ctx, shape_text(Shape{s.batch, s.len}) + " -> " + shape_text(Shape{s.batch, s.len}), shape, spec,
      [&](const Model& m, const Builder& b, data::BatchUploader& up) { return m.loss(b, up.upload(batch), 0.1f); },
      layers + " post-norm, tied, dropout 0.1, ls 0.1" +
          (experts > 0 ? ", MoE FFN top-" + std::to_string(k) + " of " + std::to_string(experts) : ""));
}

void lm_case(BenchContext& ctx) {
  const Sizes s = ctx.pick(Sizes{32, 256, 512, 2048, 32489, 8, 6}, Sizes{8, 64, 128, 512, 2000, 4, 2},
                           Sizes{2, 8, 16, 32, 64, 2, 1});
  YAML::Node model = model_yaml("transformer_lm", s, true, 0.3);
  model["vocab"] = s.vocab;
  model["layers"] = s.layers;
  model["final_norm"] = true;
  model["positions"] = "sinusoidal";
  model["tie_embeddings"] = true;
  model["max_positions"] = 512;
  // Blocks of a random stream: input x[t], target x[t+1], every target scored.
  std::mt19937 rng(11);
  std::vector<std::vector<int32_t>> inputs, targets;
  std::vector<std::vector<float>> masks;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < s.batch; ++i) {
    const std::vector<int32_t> block = random_ids(rng, s.len + 1, s.vocab);
    inputs.emplace_back(block.begin(), block.end() - 1);
    targets.emplace_back(block.begin() + 1, block.end());
    masks.emplace_back(size_t(s.len), 1.f);
    ids.push_back(i);
  }
  const data::LmBatch batch = data::make_lm_batch(inputs, targets, masks, ids, kPad);
  const UpdateSpec spec{.model = model,
                        .tokens = batch.tokens,
                        .optim = {.beta1 = 0.9, .beta2 = 0.98, .eps = 1e-8, .weight_decay = 0.01}};
  time_and_emit(
      ctx, shape_text(Shape{s.batch, s.len}), model_shape(s, false), spec,
      [&](const Model& m, const Builder& b, data::BatchUploader& up) { return m.lm_loss(b, up.upload(batch), 0.f); },
      std::to_string(s.layers) + "-layer pre-norm, tied, dropout 0.3");
}
}  // namespace

void data_parallel_update_case(BenchContext& ctx, dist::Communicator& comm) { translation_case(ctx, 0, &comm); }

std::vector<Case> model_cases() {
  return {
      {"model.transformer_base", "Transformer base (6+6, d 512, shared 32k vocabulary) training update on 256x64 pairs",
       [](BenchContext& ctx) { translation_case(ctx, 0); }},
      {"model.transformer_base_moe", "the same with every FFN a top-2-of-8 sparse MoE",
       [](BenchContext& ctx) { translation_case(ctx, 8); }},
      {"model.transformer_lm", "6-layer pre-norm Transformer LM (d 512, 32.5k words) update on 32 blocks of 256",
       lm_case},
  };
}

}  // namespace moe::bench
