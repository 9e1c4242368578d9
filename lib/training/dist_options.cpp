// dist_options.h implementation. Covered by tests/dist/data_parallel_test.cpp.
#include "training/dist_options.h"

#include "common/error.h"

namespace moe {

void register_dist_keys(config::Schema& s) {
  s.add_string("dist.backend", "auto",
               "communicator: auto (nccl on GPUs, mpi on CPUs when launched by mpirun/srun with several ranks, "
               "else none) | nccl | mpi | none");
  s.add_float("dist.bucket_mb", 25, "gradient all-reduce bucket size in MiB (buckets overlap the backward pass)");
  s.add_string("dist.shard_optimizer", "auto",
               "ZeRO stage 1: each rank keeps and updates 1/N of the optimizer state: auto (on past 2 ranks) | on | off");
  s.add_float("dist.timeout", 600, "seconds a collective may wait for the other ranks before the job aborts (0 = never)");
}

DistOptions read_dist_options(const config::Config& c) {
  DistOptions d;
  d.backend = c.get_string("dist.backend");
  MOE_CHECK(d.backend == "auto" || d.backend == "nccl" || d.backend == "mpi" || d.backend == "none",
            "dist.backend must be auto, nccl, mpi or none, got '", d.backend, "'");
  d.bucket_mb = c.get_float("dist.bucket_mb");
  MOE_CHECK(d.bucket_mb > 0, "dist.bucket_mb must be > 0, got ", d.bucket_mb);
  d.shard_optimizer = c.get_string("dist.shard_optimizer");
  if (d.shard_optimizer == "true") d.shard_optimizer = "on";
  if (d.shard_optimizer == "false") d.shard_optimizer = "off";
  MOE_CHECK(d.shard_optimizer == "auto" || d.shard_optimizer == "on" || d.shard_optimizer == "off",
            "dist.shard_optimizer must be auto, on or off, got '", d.shard_optimizer, "'");
  d.timeout = c.get_float("dist.timeout");
  MOE_CHECK(d.timeout >= 0, "dist.timeout must be >= 0 seconds, got ", d.timeout);
  return d;
}

}  // namespace moe
