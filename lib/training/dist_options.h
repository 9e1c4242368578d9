// The dist.* options of moe-train (multi-process training, lib/dist): the communicator backend, gradient
// bucket size, optimizer-state sharding (ZeRO stage 1) and the collective timeout. Their keys are in
// moe-train's key table (train_options.cpp). Covered by tests/dist/data_parallel_test.cpp.
#pragma once
#include <string>
#include <vector>

#include "common/named_enum.h"

namespace moe {

/// ZeRO stage 1: auto (on past 2 ranks) | on | off. Names by hand: `auto` is a keyword.
enum class ShardOptimizer { automatic, on, off };
inline const std::vector<std::string>& enum_names(ShardOptimizer) {
  static const std::vector<std::string> names{"auto", "on", "off"};
  return names;
}

struct DistOptions {
  std::string backend = "auto";  // auto | nccl | mpi | none (dist::make_communicator resolves it)
  double bucket_mb = 25;         // gradient all-reduce bucket size (MiB)
  ShardOptimizer shard_optimizer = ShardOptimizer::automatic;
  double timeout = 600;  // seconds a collective may take before the job is aborted (0 = never)
  /// Whether optimizer state is sharded with `world` ranks.
  bool shard(int world) const {
    return world > 1 &&
           (shard_optimizer == ShardOptimizer::on || (shard_optimizer == ShardOptimizer::automatic && world > 2));
  }
};

}  // namespace moe
