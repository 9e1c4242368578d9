// dist.*: the collectives of lib/dist and one data-parallel training update, over the process's
// communicator (dist.backend auto: run moe-bench under mpirun / srun for several ranks; alone it is
// the 1-rank "none" backend and the collectives cost nothing). Each collective moves S bytes per rank
// (f32: 100 MB full, 16 MB small, 4 kB tiny); rows report the bus bytes of the nccl-tests convention
// (all_reduce 2(N-1)/N S, all_gather / reduce_scatter (N-1)/N of the gathered size, all_to_all_v
// (N-1)/N S, broadcast S; one rank uses two ranks' factors), so GB/s is bus bandwidth. dist.update is
// model.transformer_base's update data-parallel (training/data_parallel.h) with the all-reduced bytes
// per rank and the overlap measured by the gradient buckets (model_cases.cpp).
// Covered by tests/bench/bench_test.cpp (tiny, 1 rank).
#include "bench/cases.h"

namespace moe::bench {
namespace {

dist::Communicator& communicator(Device device) {
  static std::unique_ptr<dist::Communicator> comm;
  if (!comm) comm = dist::make_communicator("auto", device);
  return *comm;
}

void collectives_case(BenchContext& ctx) {
  dist::Communicator& c = communicator(ctx.device());
  const int64_t n = ctx.pick<int64_t>(25'000'000, 4'000'000, 1000), w = c.world();
  // Bus-byte factors; one rank moves nothing, so its rows count the payload (the copy it makes or skips).
  const double bytes = 4.0 * double(n), share = w > 1 ? double(w - 1) / double(w) : 0.5;
  const std::string note = std::to_string(w) + " ranks, " + c.backend();
  const Tensor t = ctx.random(Shape{n}, DType::f32);
  ctx.emit({.label = "all_reduce", .shape = shape_text(Shape{n}), .dtype = "f32",
            .timing = ctx.time([&] { c.all_reduce(t); }), .bytes = 2 * share * bytes, .note = note});
  ctx.emit({.label = "broadcast", .shape = shape_text(Shape{n}), .dtype = "f32",
            .timing = ctx.time([&] { c.broadcast(t, 0); }), .bytes = bytes, .note = note});
  const int64_t part = n / w;
  const Tensor mine = ctx.random(Shape{part}, DType::f32), all = ctx.random(Shape{part * w}, DType::f32);
  ctx.emit({.label = "all_gather", .shape = shape_text(Shape{part}) + " x " + std::to_string(w), .dtype = "f32",
            .timing = ctx.time([&] { c.all_gather(mine, all); }), .bytes = share * 4.0 * double(part * w),
            .note = note});
  ctx.emit({.label = "reduce_scatter", .shape = shape_text(Shape{part * w}), .dtype = "f32",
            .timing = ctx.time([&] { c.reduce_scatter(all, mine); }), .bytes = share * 4.0 * double(part * w),
            .note = note});
  // MoE-style exchange: rows of 512 features, an equal share to every rank.
  const int64_t rows = std::max<int64_t>(w, n / 512 / w * w), per = rows / w;
  const Tensor in = ctx.random(Shape{rows, 512}, DType::f32), out = ctx.random(Shape{rows, 512}, DType::f32);
  const std::vector<int64_t> counts(static_cast<size_t>(w), per);
  ctx.emit({.label = "all_to_all_v", .shape = shape_text(Shape{rows, 512}), .dtype = "f32",
            .timing = ctx.time([&] { c.all_to_all_v(in, counts, out, counts); }),
            .bytes = share * 4.0 * double(rows * 512), .note = note});
}

}  // namespace

std::vector<Case> dist_cases() {
  return {
      {"dist.collectives", "all_reduce, broadcast, all_gather, reduce_scatter, all_to_all_v of 100 MB f32 per rank",
       collectives_case},
      {"dist.update", "model.transformer_base's training update, data-parallel over the ranks (batch per rank)",
       [](BenchContext& ctx) { data_parallel_update_case(ctx, communicator(ctx.device())); }},
  };
}

}  // namespace moe::bench
