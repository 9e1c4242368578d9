// cpu_threads.h implementation.
// Why OpenMP and not a hand-written pool: the ops need only fork-join loops over rows, OpenMP's
// team is created once and reused (a region costs about a microsecond, its idle threads spin
// briefly and then sleep on a futex, so nothing spins between updates), it is part of the compiler
// (no dependency), and PyTorch's CPU ops use the same model, which keeps the comparison in
// scripts/bench-cpu.sh like for like. OpenBLAS (the Debian pthread build) is told to use one thread:
// with its own workers running as well, both pools would want every core and its idle workers spin
// in sched_yield for a long time after each GEMM (the ~12% of issue 13's profile). It is told so before it
// loads too (OPENBLAS_NUM_THREADS=1, rerun_with_runtime_env), since the pool it creates at load for every
// core spins in sched_yield for its first ~0.1 s even when never used (docs/PERF.md). Under an address-space
// limit the thread count is capped (cpu_threads.h: kThreadAddressSpace; tests/scripts/memory_limits.sh).
#include "common/cpu_threads.h"

#include <omp.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/openblas_core.h"

extern "C" void openblas_set_num_threads(int);

namespace moe {

namespace {
std::atomic<int> g_threads{0};

int read_int(const std::string& path) {
  std::ifstream f(path);
  int v = -1;
  f >> v;
  return f ? v : -1;
}
}  // namespace

int physical_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return std::max(1, omp_get_num_procs());
  std::set<std::pair<int, int>> cores;
  int cpus = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    ++cpus;
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    const int package = read_int(base + "physical_package_id"), core = read_int(base + "core_id");
    cores.emplace(package, core < 0 ? c : core);  // no topology: count the CPU itself
  }
  return std::max(1, std::min(cpus, static_cast<int>(cores.size())));
}

int process_threads() {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec); !ec && it != decltype(it)();
       it.increment(ec))
    ++n;
  return ec ? 0 : n;
}

namespace {
/// `n`, or fewer threads when their address space (kThreadAddressSpace each) would pass half of RLIMIT_AS
/// beyond a base of 512 MiB (the program, its libraries and the first thread's buffers); an error when the
/// limit is below that base (OpenBLAS would wait forever for its first buffer).
int threads_within_address_space(int n) {
  rlimit r{};
  if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return n;
  constexpr size_t kBase = size_t(512) << 20;
  MOE_CHECK(r.rlim_cur >= kBase, "the address space is limited to ", r.rlim_cur >> 20,
            " MiB (ulimit -v); moe needs at least ", kBase >> 20,
            " MiB (the program, its libraries and a CPU thread's buffers), and room for the tensors beyond it");
  const size_t half = static_cast<size_t>(r.rlim_cur) / 2;
  const int most = static_cast<int>(std::max<size_t>(1, (half > kBase ? half - kBase : 0) / kThreadAddressSpace));
  if (n <= most) return n;
  spdlog::warn(
      "CPU threads: {} instead of {}: the address space is limited to {} MiB (ulimit -v) and each thread "
      "maps about {} MiB (OpenBLAS's buffer, a malloc arena, a stack)",
      most, n, r.rlim_cur >> 20, kThreadAddressSpace >> 20);
  return most;
}
}  // namespace

void set_cpu_threads(int n) {
  if (n <= 0) n = physical_cores();
  n = threads_within_address_space(n);
  openblas_set_num_threads(1);
  omp_set_num_threads(n);
  g_threads.store(n);
}

int cpu_threads() {
  int n = g_threads.load();
  if (n == 0) {
    set_cpu_threads(0);
    n = g_threads.load();
  }
  return n;
}

void rerun_with_runtime_env(char** argv) {
  std::vector<const char*> set;
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT") &&
      setenv("GOMP_SPINCOUNT", kOpenmpSpinCount, 1) == 0)
    set.push_back("GOMP_SPINCOUNT");
  if (!std::getenv("OPENBLAS_NUM_THREADS") && setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0)
    set.push_back("OPENBLAS_NUM_THREADS");
  if (const std::string core = openblas_core_override();
      !core.empty() && !std::getenv("OPENBLAS_CORETYPE") && setenv("OPENBLAS_CORETYPE", core.c_str(), 1) == 0)
    set.push_back("OPENBLAS_CORETYPE");
  if (set.empty()) return;
  execv("/proc/self/exe", argv);
  for (const char* name : set) unsetenv(name);  // no rerun: the libraries keep their defaults, and child processes
}

void parallel_for(int64_t n, int64_t min_per_thread, RangeFn fn) {
  if (n <= 0) return;
  const int64_t most = n / std::max<int64_t>(1, min_per_thread);
  const int t = static_cast<int>(std::min<int64_t>(cpu_threads(), most));
  if (t <= 1 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
#pragma omp parallel num_threads(t)
  {
    const int64_t i = omp_get_thread_num(), m = omp_get_num_threads();
    const int64_t lo = n * i / m, hi = n * (i + 1) / m;
    if (lo < hi) fn(lo, hi);
  }
}

}  // namespace moe
