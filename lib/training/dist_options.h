// The dist.* keys of moe-train (multi-process training, lib/dist): the communicator backend, gradient
// bucket size, optimizer-state sharding (ZeRO stage 1) and the collective timeout. Registered by
// register_train_keys, read by TrainOptions::from_config; errors name the key.
// Covered by tests/dist/data_parallel_test.cpp.
#pragma once
#include <string>

#include "config/config.h"

namespace moe {

struct DistOptions {
  std::string backend = "auto";          // auto | nccl | mpi | none
  double bucket_mb = 25;                 // gradient all-reduce bucket size (MiB)
  std::string shard_optimizer = "auto";  // auto (on past 2 ranks) | on | off
  double timeout = 600;                  // seconds a collective may take before the job is aborted (0 = never)
  /// Whether optimizer state is sharded with `world` ranks.
  bool shard(int world) const { return world > 1 && (shard_optimizer == "on" || (shard_optimizer == "auto" && world > 2)); }
};

void register_dist_keys(config::Schema& schema);
DistOptions read_dist_options(const config::Config& config);

}  // namespace moe
