// data_parallel.h implementation. Covered by tests/dist/data_parallel_test.cpp.
#include "training/data_parallel.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace moe {

namespace {

int64_t count_nonzero(const Tensor& t) {
  int64_t n = 0;
  for (float v : t.to_vector<float>()) n += v != 0;
  return n;
}

}  // namespace

TrainBatch rank_slice(const TrainBatch& batch, int rank, int world) {
  if (world == 1) return batch;
  const int64_t n = batch.size(), a = n * rank / world, b = n * (rank + 1) / world;
  auto ids = [&](const std::vector<int64_t>& v) { return std::vector<int64_t>(v.begin() + a, v.begin() + b); };
  if (const auto* x = std::get_if<data::Batch>(&batch.data)) {
    data::Batch s;
    s.ids = ids(x->ids);
    if (b > a) {
      s.src = x->src.rows(a, b - a);
      s.src_mask = x->src_mask.rows(a, b - a);
      s.tgt_in = x->tgt_in.rows(a, b - a);
      s.tgt_out = x->tgt_out.rows(a, b - a);
      s.tgt_mask = x->tgt_mask.rows(a, b - a);
      if (x->tgt_weights.defined()) s.tgt_weights = x->tgt_weights.rows(a, b - a);
      s.src_lengths.assign(x->src_lengths.begin() + a, x->src_lengths.begin() + b);
      s.tgt_lengths.assign(x->tgt_lengths.begin() + a, x->tgt_lengths.begin() + b);
      s.src_tokens = count_nonzero(s.src_mask);
      s.tgt_tokens = count_nonzero(s.tgt_mask);
      if (x->tgt_rows.defined()) data::set_real_rows(s);
    }
    return TrainBatch{std::move(s)};
  }
  const auto& x = std::get<data::LmBatch>(batch.data);
  data::LmBatch s;
  s.ids = ids(x.ids);
  if (b > a) {
    s.input = x.input.rows(a, b - a);
    s.target = x.target.rows(a, b - a);
    s.mask = x.mask.rows(a, b - a);
    if (x.weights.defined()) s.weights = x.weights.rows(a, b - a);
    s.tokens = count_nonzero(s.mask);
  }
  return TrainBatch{std::move(s)};
}

DataParallel::DataParallel(dist::Communicator& comm, const DistOptions& options, ParameterStore& store,
                           Optimizer& optimizer)
    : comm_(comm), store_(store) {
  if (comm_.world() == 1) return;
  placement_ = std::make_unique<ExpertPlacement>(comm_, store_);
  sync_comm_ = comm_.dup();
  sync_comm_->set_timeout(options.timeout);
  // This rank's experts already hold their whole gradient (every token routed to them came here).
  sync_ = std::make_unique<dist::GradSync>(*sync_comm_, store_, static_cast<int64_t>(options.bucket_mb * 1024 * 1024),
                                           [](const ParamEntry& e) { return !ExpertPlacement::is_local(e); });
  if (experts()) {
    // Expert parallelism already partitions the experts' Adam state (each expert's lives on its one rank);
    // ZeRO-1's flat shards of the whole store would cut across that layout, so the two are exclusive.
    MOE_CHECK(options.shard_optimizer != ShardOptimizer::on,
              "dist.shard_optimizer on and model.ffn.experts_per_rank exclude "
              "each other: with expert parallelism each rank keeps only its own experts' optimizer state, and the "
              "replicated parameters' state stays whole; set dist.shard_optimizer auto or off");
    optimizer.set_partitioned(experts()->ranges(), [this](const Tensor& own) { comm_.all_reduce(own); });
  } else if (options.shard(comm_.world())) {
    const int64_t n = store_.values().numel(), w = comm_.world();
    shard_size_ = (n + w - 1) / w;
    shard_begin_ = std::min(n, shard_size_ * comm_.rank());
    shard_end_ = std::min(n, shard_begin_ + shard_size_);
    optimizer.set_shard(shard_begin_, shard_end_);
  }
}

void DataParallel::broadcast_parameters() {
  if (world() == 1) return;
  comm_.broadcast(store_.values(), 0);
  if (experts()) experts()->initialise(store_);
}

const ParameterStore& DataParallel::whole_parameters() { return experts() ? experts()->gathered() : store_; }

void DataParallel::begin() {
  if (sync_) sync_->begin();
}

void DataParallel::arm(Graph& g) {
  if (sync_) g.set_param_grad_hook([this](int p) { sync_->ready(p); });
}

void DataParallel::finish(double& loss_sum, int64_t& used) {
  if (!sync_) return;
  sync_->finish();
  Tensor figures = Tensor::from_vector(std::vector<double>{loss_sum, static_cast<double>(used)}, Shape{2});
  comm_.all_reduce(figures);
  const auto v = figures.to_vector<double>();
  loss_sum = v[0];
  used = static_cast<int64_t>(v[1]);
}

void DataParallel::gather_shards(const Tensor& full, const Tensor& mine) {
  const int64_t n = full.numel(), w = world();
  Tensor send = Tensor::zeros(Shape{shard_size_}, DType::f32, full.device());
  if (mine.numel()) send.flat_range(0, mine.numel()).copy_from(mine);
  Tensor all = Tensor::empty(Shape{shard_size_ * w}, DType::f32, full.device());
  comm_.all_gather(send, all);
  Tensor(full).copy_from(all.flat_range(0, n));
}

void DataParallel::after_step() {
  if (!sharded()) return;
  const Tensor& values = store_.values();
  gather_shards(values, values.flat_range(shard_begin_, shard_end_ - shard_begin_));
}

std::map<std::string, Tensor> DataParallel::full_state(const Optimizer& optimizer) {
  std::map<std::string, Tensor> s = optimizer.state();
  if (experts()) {
    for (auto& [name, t] : s)
      if (t.shape().ndim() == 1 && t.dtype() == DType::f32 && t.numel() == store_.values().numel())
        t = experts()->to_full(t);
    return s;
  }
  if (!sharded()) return s;
  for (auto& [name, t] : s) {
    if (t.shape().ndim() != 1 || t.dtype() != DType::f32 || t.numel() != shard_end_ - shard_begin_) continue;
    Tensor full = Tensor::empty(Shape{store_.values().numel()}, DType::f32, t.device());
    gather_shards(full, t);
    t = full;
  }
  return s;
}

std::string DataParallel::describe(int64_t max_tokens_per_rank) const {
  return fmt::format(
      "data parallel over {} ranks ({} backend): train.max_tokens {} per rank, global batch up to {} tokens; "
      "gradients in {} buckets overlapped with backward; optimizer state {}",
      world(), comm_.backend(), max_tokens_per_rank, max_tokens_per_rank * world(), sync_ ? sync_->bucket_count() : 0,
      sharded() ? fmt::format("sharded (ZeRO-1, {} elements per rank)", shard_size_)
      : placement_ && placement_->active()
          ? std::string("replicated; MoE experts placed over the ranks (experts_per_rank)")
          : std::string("replicated"));
}

}  // namespace moe
