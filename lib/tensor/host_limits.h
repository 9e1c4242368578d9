// The memory limits a process runs under, as the CPU allocator sizes its reservations by them and names
// them when memory runs out: the address-space limit (RLIMIT_AS: `ulimit -v`, SGE's h_vmem; it counts
// reserved addresses too, so the host arena must not reserve 1 TiB under it) and the cgroup's memory limit
// (cgroup v2 memory.max, v1 memory.limit_in_bytes: the smallest along the path of /proc/self/cgroup, as
// Slurm, Docker and Kubernetes set it; resident memory past it ends the process).
// Covered by tests/unit/host_limits_test.cpp and tests/scripts/memory_limits.sh.
#pragma once
#include <cstddef>
#include <string>

namespace moe {

struct HostLimits {
  size_t address_space = 0;  // RLIMIT_AS soft limit in bytes (0: unlimited)
  size_t cgroup_memory = 0;  // the cgroup's memory limit in bytes (0: none found)

  /// The limits of this process (read each call: tests change RLIMIT_AS).
  static HostLimits current();
  /// "address space limited to 3.00 GiB (ulimit -v), cgroup memory limit 16.00 GiB", or "no memory limit found".
  std::string describe() const;
};

/// The address space this process has mapped (VmSize, /proc/self/statm), 0 when unknown.
size_t address_space_in_use();

/// Parses a cgroup memory-limit file's text ("max", "9223372036854771712" or a byte count): 0 = no limit.
size_t parse_cgroup_limit(const std::string& text);

}  // namespace moe
