// One CPU threading model for every op: OpenMP parallel regions (lib/common/cpu_threads.cpp says
// why), entered through parallel_for, and OpenBLAS kept single-threaded inside them so that its own
// pthread workers never spin (sched_yield) against ours; GEMMs are split across the threads by
// ops/matmul.cpp instead. The thread count is set once per process (--cpu-threads N on every
// program, apps/cli/program.h) and defaults to the physical cores the process may run on.
// Covered by tests/unit/cpu_threads_test.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace moe {

/// Physical cores (distinct core ids) among the CPUs this process may run on; at least 1.
int physical_cores();
/// The address space each thread that runs ops maps, about: OpenBLAS's GEMM buffer (128 MiB in Debian 12's
/// build), glibc's malloc arena (64 MiB) and a stack (8 MiB), measured in docs/CLUSTERS.md. Under an
/// address-space limit (ulimit -v) OpenBLAS waits forever for a buffer it cannot map, so set_cpu_threads
/// keeps the thread count to what half of the limit holds (with a warning), and the host arena leaves this
/// much per thread unreserved (tensor/host_arena.h).
constexpr size_t kThreadAddressSpace = size_t(200) << 20;
/// The threads this process runs now (Linux: /proc/self/task), 0 when that cannot be read.
int process_threads();
/// The thread count parallel_for uses (first call: physical_cores(), OpenBLAS set to 1 thread).
int cpu_threads();
/// Sets the thread count (n <= 0: physical_cores()), at most what an address-space limit allows (above); an
/// error when the limit is below 512 MiB.
void set_cpu_threads(int n);

/// How long libgomp's idle threads spin before they sleep (GOMP_SPINCOUNT, in spins: tens of
/// microseconds, enough for the back-to-back regions of one op sequence). libgomp's default,
/// 300,000 spins (milliseconds), kept the idle thread spinning through every serial stretch of
/// decoding, and on a loaded machine took the core from the thread with the work: greedy decoding
/// at 2 threads took 48.5 s against 10.9-15.8 s with this value, 4.8-8.1 s at 1 thread (docs/PERF.md).
constexpr const char* kOpenmpSpinCount = "10000";
/// libgomp reads GOMP_SPINCOUNT once, when it is loaded, before main(), and OpenBLAS reads
/// OPENBLAS_NUM_THREADS and OPENBLAS_CORETYPE then (common/openblas_core.h). Every program's main() calls this
/// first: it sets GOMP_SPINCOUNT to kOpenmpSpinCount when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set,
/// OPENBLAS_NUM_THREADS to 1 when it is not set (moe runs OpenBLAS on one thread: the workers it would start for
/// every other core spin at load for about 0.1 s, on the cores the ops need), and OPENBLAS_CORETYPE to
/// openblas_core_override() when that is not empty and the variable is not set, and when it set any runs the
/// program again (execv of /proc/self/exe with the same argv, so the same process id); it returns when there is
/// nothing to set (the user's choice, or the rerun) or when the rerun fails (then it unsets what it set).
void rerun_with_runtime_env(char** argv);

/// A non-owning reference to a callable void(int64_t begin, int64_t end) (no allocation per call).
class RangeFn {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F&& f)
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(o))(b, e); }) {}
  void operator()(int64_t b, int64_t e) const { call_(obj_, b, e); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};

/// Element-wise ops: fewer elements than this per thread are not worth a fork.
constexpr int64_t kElementsPerThread = 16384;

/// Calls fn(begin, end) on contiguous, disjoint parts of [0, n) covering it, one part per thread,
/// using at most n / min_per_thread threads (serially when that is 1, or inside another parallel_for).
void parallel_for(int64_t n, int64_t min_per_thread, RangeFn fn);

}  // namespace moe
