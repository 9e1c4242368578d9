// launch_env.h implementation: OpenMPI's variables first, then Slurm's, else a single process.
// Covered by tests/dist/communicator_test.cpp.
#include "dist/launch_env.h"

#include <cstdlib>

#include "common/error.h"

namespace moe::dist {

namespace {

int read_int(const std::function<std::string(const std::string&)>& lookup, const std::string& name, int min) {
  const std::string text = lookup(name);
  size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  MOE_CHECK(used == text.size() && used > 0 && value >= min, "the launcher's variable ", name, "='", text,
            "' is not an integer >= ", min);
  return value;
}

}  // namespace

LaunchEnv launch_env_from(const std::function<std::string(const std::string&)>& lookup) {
  LaunchEnv e;
  const char* names[2][3] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
                             {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}};
  const char* launchers[2] = {"openmpi", "slurm"};
  for (int i = 0; i < 2; ++i) {
    if (lookup(names[i][0]).empty()) continue;
    e.launcher = launchers[i];
    e.rank = read_int(lookup, names[i][0], 0);
    e.world = lookup(names[i][1]).empty() ? 1 : read_int(lookup, names[i][1], 1);
    e.local_rank = lookup(names[i][2]).empty() ? 0 : read_int(lookup, names[i][2], 0);
    MOE_CHECK(e.rank < e.world, "the launcher's variables say rank ", e.rank, " of ", e.world, " (", names[i][0],
              ", ", names[i][1], ")");
    return e;
  }
  return e;
}

LaunchEnv launch_env_from_environment() {
  return launch_env_from([](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return std::string(v ? v : "");
  });
}

}  // namespace moe::dist
