// LaunchEnv: this process's rank, the world size and its rank on the node, read from the variables
// the launcher sets: OpenMPI's mpirun (OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK), Slurm's srun
// (SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID), or none of them (rank 0 of 1). The local rank
// picks the GPU. Malformed values are errors naming the variable. Covered by tests/dist/communicator_test.cpp.
#pragma once
#include <functional>
#include <string>

namespace moe::dist {

struct LaunchEnv {
  int rank = 0, world = 1, local_rank = 0;
  std::string launcher = "none";  // "openmpi", "slurm" or "none"
};

/// From the process environment.
LaunchEnv launch_env_from_environment();
/// From `lookup` (name -> value, "" when unset): what tests use.
LaunchEnv launch_env_from(const std::function<std::string(const std::string&)>& lookup);

}  // namespace moe::dist
