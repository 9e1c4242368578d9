// The communicator every dist test shares: the process's backend picked by "auto" (mpi under mpirun,
// none alone), made once (MPI can be initialised once per process).
#pragma once
#include "dist/communicator.h"

namespace moe::test {

inline dist::Communicator& comm() {
  static std::unique_ptr<dist::Communicator> c = dist::make_communicator("auto", Device::cpu());
  return *c;
}

}  // namespace moe::test
