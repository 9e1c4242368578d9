// What the whole-model moe-bench cases (model_cases.cpp) time: one training update as moe-train makes
// it, through public APIs only (create_model, Graph, Builder, Model::loss / lm_loss, Optimizer): the
// gradients zeroed, the batch uploaded (data::BatchUploader), a fresh training graph (compute dtype =
// the run's: bf16 on a GPU, f32 on the CPU; f32 master parameters in one ParameterStore kept across
// calls), the summed loss plus each auxiliary loss times the batch's target tokens, the forward, the
// loss read back and checked finite, the backward scaled by 1 / tokens (gradients of the mean loss),
// and one optimizer step over every trainable range (its gradient norm syncs the host, as in training).
// With a communicator of several ranks (UpdateSpec::comm) the update is data-parallel (DataParallel:
// bucketed all-reduce overlapped with backward) and reports the bytes and the overlap of its buckets.
// Model FLOPs of an update (model_train_flops), counted exactly per GEMM:
//   forward multiply-adds per token, encoder layer: 4d^2 (q, k, v, o) + FFN; decoder layer: 4d^2 (self)
//   + 2d^2 (cross q, o) + FFN, plus 2d^2 per source token (cross k, v); output: d*V per target token;
//   FFN: 2*d*f dense, k*2*d*f + 2*d*E for a top-k-of-E MoE (experts of hidden f; gate + noise maps);
//   GEMM FLOPs = 3 (forward + backward) * 2 * multiply-adds; plus the attention cores from
//   attention_flops() (lib/ops/attention.h, forward + backward; decoder self-attention causal).
// Embedding lookups, norms, softmax and the optimizer are not counted. Covered by
// tests/bench/bench_test.cpp (the model.* cases at tiny shapes; the formula at tiny and full shapes).
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>

#include "bench/context.h"
#include "data/batch_upload.h"
#include "models/model.h"
#include "dist/communicator.h"
#include "training/optimizer.h"

namespace moe::bench {

/// The sizes that set an update's FLOPs. src_len == 0: a decoder-only LM (no encoder, no cross-attention,
/// causal self-attention over tgt_len tokens).
struct ModelShape {
  int64_t batch = 0;                 // sentences (pairs) or blocks
  int64_t src_len = 0, tgt_len = 0;  // tokens per source / target row
  int64_t d = 0, ffn = 0, vocab = 0;
  int heads = 1, enc_layers = 0, dec_layers = 0;
  int experts = 0, k = 0;  // experts > 0: the FFN is a top-k-of-experts MoE, each expert d -> ffn -> d
};

/// Model FLOPs of one training update (forward + backward), as in the file comment.
double model_train_flops(const ModelShape& s);

/// The loss of one batch: Model::loss or Model::lm_loss of a CPU batch uploaded with `uploader`.
using BatchLossFn = std::function<Expr(const Model& model, const Builder& b, data::BatchUploader& uploader)>;

struct UpdateSpec {
  YAML::Node model;                // the model section (vocabulary sizes and special ids filled in)
  int64_t tokens = 0;              // target tokens of the batch (the loss is their sum)
  std::string optimizer = "adam";  // Optimizer::create
  OptimizerOptions optim = {};
  double lr = 1e-4;
  /// Several ranks: a data-parallel update (training/data_parallel.h: bucketed all-reduce overlapped
  /// with backward, sharded Adam past 2 ranks); each rank trains this batch, the global batch is world x.
  dist::Communicator* comm = nullptr;
};

struct UpdateTiming {
  Timing timing;
  int64_t params = 0;    // parameters of the model (ParameterStore::count)
  double last_loss = 0;  // mean loss per target token of the last timed update
  // Data parallel only (per update, from the gradient buckets): bytes all-reduced per rank, seconds
  // the all-reduces took and seconds the update waited for them after backward (the unhidden part).
  double dp_bytes = 0, dp_comm_s = 0, dp_wait_s = 0;
};

/// Times one training update per call, as in the file comment; a non-finite loss is an error.
UpdateTiming time_update(BenchContext& ctx, const UpdateSpec& spec, const BatchLossFn& loss);

}  // namespace moe::bench
