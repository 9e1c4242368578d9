// DataParallel: what the trainer does differently with several ranks (lib/dist).
// Data: every rank runs the same batch generator with world times the per-rank train.max_tokens /
// max_sentences, so the sequence of global batches is the one a single process with that batch
// would see; rank r trains on rows [r*n/N, (r+1)*n/N) of each global batch (rank_slice). Losses
// are scaled by 1 / (target tokens of the global update) and the gradients summed over the ranks
// (GradSync, bucketed and overlapped with backward), so N ranks with batch B/N take the update one
// process takes with batch B (up to summation order). Parameters are broadcast from rank 0 at the
// start. With sharding (ZeRO stage 1), rank r's optimizer keeps and updates only the elements
// [r*S, (r+1)*S) of the flat buffers, S = ceil(count / N), and the parameters are all-gathered after
// each step; checkpoints gather the optimizer state so that they do not depend on N.
// Covered by tests/dist/data_parallel_test.cpp (mpirun -np 2 and -np 4).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "dist/communicator.h"
#include "dist/grad_sync.h"
#include "graph/graph.h"
#include "training/dist_options.h"
#include "training/expert_placement.h"
#include "training/optimizer.h"
#include "training/train_task.h"

namespace moe {

/// Rows [rank*n/world, (rank+1)*n/world) of `batch` with their token counts (may be empty).
TrainBatch rank_slice(const TrainBatch& batch, int rank, int world);

class DataParallel {
 public:
  DataParallel(dist::Communicator& comm, const DistOptions& options, ParameterStore& store, Optimizer& optimizer);
  int rank() const { return comm_.rank(); }
  int world() const { return comm_.world(); }
  bool lead() const { return comm_.rank() == 0; }
  bool sharded() const { return shard_end_ >= 0; }
  dist::Communicator& comm() { return comm_; }

  /// Rank 0's parameter values on every rank; with expert parallelism each rank's experts then get
  /// their rows of the single-process initialisation.
  void broadcast_parameters();
  /// Expert parallelism (expert_placement.h): nullptr when no rank holds experts of its own.
  ExpertPlacement* experts() { return placement_ && placement_->active() ? placement_.get() : nullptr; }
  /// The parameters as one process holds them (the store itself without expert parallelism; a collective).
  const ParameterStore& whole_parameters();
  /// Sum over the ranks (1 rank: the value itself).
  int64_t global(int64_t local) { return comm_.sum(local); }
  /// An update's gradient synchronisation: begin(), arm(g) on the graph of its last backward, then
  /// finish(loss_sum, used), which sums the gradients and the two figures over the ranks.
  void begin();
  void arm(Graph& g);
  void finish(double& loss_sum, int64_t& used);
  /// After the optimizer steps: the parameters every rank updated its shard of, on every rank.
  void after_step();
  /// The optimizer's state, whole (gathered from the shards when sharded; a collective).
  std::map<std::string, Tensor> full_state(const Optimizer& optimizer);
  /// One line for the log: ranks, backend, global batch, buckets, sharding.
  std::string describe(int64_t max_tokens_per_rank) const;
  const dist::GradSync::Stats* sync_stats() const { return sync_ ? &sync_->stats() : nullptr; }

 private:
  /// Every rank's part [r*S, r*S + S) of `full` (count elements) gathered into `full`.
  void gather_shards(const Tensor& full, const Tensor& mine);

  dist::Communicator& comm_;
  ParameterStore& store_;
  std::unique_ptr<dist::Communicator> sync_comm_;  // GradSync's thread: a duplicate, so it never mixes with the layers'
  std::unique_ptr<dist::GradSync> sync_;
  std::unique_ptr<ExpertPlacement> placement_;
  int64_t shard_size_ = 0, shard_begin_ = 0, shard_end_ = -1;
};

}  // namespace moe
