// model_step.h implementation. Covered by tests/bench/bench_test.cpp.
#include "bench/model_step.h"

#include <cmath>
#include <memory>

#include "common/error.h"
#include "graph/graph.h"
#include "models/model_registry.h"
#include "ops/attention.h"
#include "training/data_parallel.h"

namespace moe::bench {

double model_train_flops(const ModelShape& s) {
  const double d = double(s.d), f = double(s.ffn);
  const double ns = double(s.batch * s.src_len), nt = double(s.batch * s.tgt_len);
  const double ffn = s.experts > 0 ? s.k * 2 * d * f + 2 * d * s.experts : 2 * d * f;  // multiply-adds per token
  const int64_t dh = s.d / s.heads;
  const bool seq2seq = s.src_len > 0;
  double macs = double(s.enc_layers) * ns * (4 * d * d + ffn);
  macs += double(s.dec_layers) * (nt * (4 * d * d + ffn) + (seq2seq ? nt * 2 * d * d + ns * 2 * d * d : 0));
  macs += nt * d * double(s.vocab);
  auto att = [&](int64_t tq, int64_t tk, bool causal) {
    return attention_flops(s.batch, s.heads, tq, tk, dh, causal, false) +
           attention_flops(s.batch, s.heads, tq, tk, dh, causal, true);
  };
  double attention = double(s.dec_layers) * att(s.tgt_len, s.tgt_len, true);
  if (seq2seq)
    attention += double(s.enc_layers) * att(s.src_len, s.src_len, false) +
                 double(s.dec_layers) * att(s.tgt_len, s.src_len, false);
  return 3 * 2 * macs + attention;
}

UpdateTiming time_update(BenchContext& ctx, const UpdateSpec& spec, const BatchLossFn& loss) {
  MOE_CHECK(spec.tokens > 0, "time_update: an update without target tokens");
  const Device device = ctx.device();
  const std::unique_ptr<Model> model = create_model(spec.model);
  data::BatchUploader uploader(device);
  ParameterStore store(device, 1);
  {  // declare every parameter by building the loss once (no forward), then lay the store out
    Graph g(device, &store, GraphOptions{.training = true, .compute_dtype = ctx.dtype(), .seed = 1});
    loss(*model, Builder(g), uploader);
  }
  store.allocate();
  const std::unique_ptr<Optimizer> opt = Optimizer::create(spec.optimizer, spec.optim);
  std::unique_ptr<DataParallel> dp;
  if (spec.comm && spec.comm->world() > 1) {
    // Buckets of 25 MiB (moe-train's default) at full scale; smaller ones at the CPU's small shapes, so
    // that the 1.2M-parameter model still has several and the overlap is measured.
    dp = std::make_unique<DataParallel>(*spec.comm, DistOptions{.bucket_mb = ctx.pick(25.0, 0.5, 0.001)}, store, *opt);
    dp->broadcast_parameters();
  }
  const double tokens = double(spec.tokens);
  uint64_t step = 0;
  UpdateTiming out;
  out.params = store.count();
  out.timing = ctx.time([&] {
    store.zero_grads();
    Graph g(device, &store, GraphOptions{.training = true, .compute_dtype = ctx.dtype(), .seed = 1, .step = step++});
    if (dp) {
      dp->begin();
      dp->arm(g);
    }
    const Builder b(g);
    const Expr l = loss(*model, b, uploader);
    const Expr objective = b.objective(l, tokens);
    g.forward();
    const double value = l.val().item();
    MOE_CHECK(std::isfinite(value), "time_update: the training loss of ", model->type(), " is ", value, " at call ",
              step, " (", spec.tokens, " target tokens)");
    g.backward(objective, 1.0 / (dp ? tokens * dp->world() : tokens));
    double loss_sum = value;
    int64_t used = spec.tokens;
    if (dp) dp->finish(loss_sum, used);
    opt->step(store, spec.lr);
    if (dp) dp->after_step();
    out.last_loss = loss_sum / double(used);
  });
  if (dp) {
    const auto& s = *dp->sync_stats();
    const double updates = double(std::max<uint64_t>(step, 1));  // every call, warm-up included
    out.dp_bytes = double(s.bytes) / updates;
    out.dp_comm_s = s.comm_s / updates;
    out.dp_wait_s = s.wait_s / updates;
  }
  return out;
}

}  // namespace moe::bench
