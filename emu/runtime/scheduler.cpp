// CUDA emulator: launches (emu/README.md). A launch is checked like CUDA checks it (grid and block
// limits, dynamic shared memory against the kernel's opt-in on the current device, the stream's
// device) and queued on its stream (queue.h); when it runs, its blocks are taken in turn by a pool of
// workers (MOE_EMU_WORKERS, default: the CPU count). A worker runs a block's threads as fibers; each
// runs until it waits at __syncthreads, waits in a warp collective or ends. When every live thread
// waits at the barrier the barrier opens (a new epoch for the race checker); when no thread can run
// and some have not ended, the block is deadlocked. Blocks are taken in order and threads run in
// order unless MOE_EMU_SCHEDULE_SEED (or set_schedule_seed) names a seed: then each launch takes its
// blocks in a pseudo-random permutation and runs ready threads in a shuffled order, both drawn from
// the seed and the launch, so results that depend on the order differ between seeds.
// MOE_EMU_TRACE=1 prints every launch (kernel, grid, block, time).
// Covered by tests/emu/checker_test.cpp, tests/emu/blind_spot_test.cpp and every emulated launch.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <thread>

#include "devices.h"
#include "moe_emu/control.h"
#include "queue.h"
#include "state.h"

namespace moe_emu {

thread_local constinit const Position* tls_position = nullptr;
thread_local constinit ThreadState* tls_thread = nullptr;

namespace {
constexpr size_t kStackBytes = 128 * 1024;
constexpr size_t kArenaBytes = kMaxSharedPerBlock + kStaticSharedLimit + 64 * 1024;

struct Pool {
  std::mutex launch_mutex;  // one launch at a time
  std::mutex mutex;
  std::condition_variable wake, done;
  Launch* job = nullptr;
  uint64_t job_id = 0;
  int busy = 0;
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
};

Pool& pool();

std::atomic<uint64_t>& schedule_seed() {
  static std::atomic<uint64_t> seed = [] {
    const char* v = std::getenv("MOE_EMU_SCHEDULE_SEED");
    return v ? std::strtoull(v, nullptr, 0) : 0ull;
  }();
  return seed;
}

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Block `i` of `n` in the launch's order: a keyed Feistel permutation of [0, 2^bits) walked until it
/// lands below n (identity when key is 0).
unsigned block_in_order(unsigned i, unsigned n, uint64_t key) {
  if (!key || n < 2) return i;
  unsigned half = 1;
  while ((1ull << (2 * half)) < n) ++half;
  const uint64_t mask = (1ull << half) - 1;
  uint64_t x = i;
  do {
    uint64_t l = x >> half, r = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t f = mix(key ^ (round << 56) ^ r) & mask;
      const uint64_t next = l ^ f;
      l = r, r = next;
    }
    x = (l << half) | r;
  } while (x >= n);
  return unsigned(x);
}

/// Reorders the threads waiting to run (seeded runs only): warps in a random order, the lanes of each
/// rotated by a random offset, so that each warp's fiber stacks stay together in memory. Linear in
/// the block's threads.
void shuffle_ready(Worker& w, uint64_t& state) {
  if (w.ready.size() - w.ready_head < 2) return;
  bool waiting[kMaxThreads] = {};
  for (size_t i = w.ready_head; i < w.ready.size(); ++i) waiting[w.ready[i]] = true;
  const unsigned warps = (w.nthreads + kWarpSize - 1) / kWarpSize;
  unsigned order[kMaxWarps];
  for (unsigned i = 0; i < warps; ++i) order[i] = i;
  for (unsigned i = warps; i > 1; --i) {
    state = mix(state);
    std::swap(order[i - 1], order[state % i]);
  }
  size_t next = w.ready_head;
  for (unsigned i = 0; i < warps; ++i) {
    const unsigned turn = unsigned(state = mix(state)) % kWarpSize;
    for (unsigned l = 0; l < unsigned(kWarpSize); ++l) {
      const unsigned tid = order[i] * kWarpSize + (l + turn) % kWarpSize;
      if (tid < w.nthreads && waiting[tid]) w.ready[next++] = int(tid);
    }
  }
}

std::unique_ptr<Worker> make_worker(int id) {
  auto w = std::make_unique<Worker>();
  w->id = id;
  w->stack_bytes = kStackBytes;
  void* stacks = mmap(nullptr, kStackBytes * kMaxThreads, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (stacks == MAP_FAILED) {
    std::fprintf(stderr, "moe-emu: cannot map %zu bytes of fiber stacks\n", kStackBytes * kMaxThreads);
    std::abort();
  }
  w->stacks = static_cast<char*>(stacks);
  for (int t = 0; t < kMaxThreads; ++t) mprotect(w->stacks + size_t(t) * kStackBytes, 4096, PROT_NONE);  // guard
  w->arena_bytes = kArenaBytes;
  w->arena = static_cast<unsigned char*>(std::aligned_alloc(4096, kArenaBytes));
  w->shadow.assign(kArenaBytes, ShadowByte{});
  w->shadow_pcs.assign(kArenaBytes, ShadowPcs{});
  w->threads.resize(kMaxThreads);
  w->warps.resize(kMaxWarps);
  for (ThreadState& t : w->threads) t.worker = w.get(), t.pending.reserve(256);
  return w;
}

void fiber_entry(void* arg) {
  ThreadState& t = *static_cast<ThreadState*>(arg);
  Worker& w = *t.worker;
  w.launch->run(w.launch->ctx);
  flush_pending_writes(t);
  pipeline_finish(t);  // copies nobody waited for still land, as on the GPU
  finish_async(t);
  t.status = ThreadStatus::exited;
  ++w.exited;
  fiber_switch(t.fiber, w.scheduler);
  std::abort();  // an exited fiber is never resumed
}

void resume(Worker& w, ThreadState& t) {
  t.status = ThreadStatus::ready;
  t.segment = ++w.segment_counter;
  tls_thread = &t;
  tls_position = &t.pos;
  fiber_switch(w.scheduler, t.fiber);
  tls_thread = nullptr;
  tls_position = nullptr;
}

/// Every live thread waits at a barrier: check that they agree, then open it.
void release_barrier(Worker& w) {
  std::set<uintptr_t> pcs;
  ThreadState* first = nullptr;
  for (unsigned i = 0; i < w.nthreads; ++i) {
    ThreadState& t = w.threads[i];
    if (t.status != ThreadStatus::at_barrier) continue;
    if (!first) first = &t;
    pcs.insert(t.wait_pc);
  }
  if (w.exited > 0)
    report(*first, ReportKind::divergent_barrier, first->wait_pc,
           std::to_string(w.at_barrier) + " threads wait at __syncthreads while " + std::to_string(w.exited) +
               " threads of the block have exited without reaching it",
           false);
  if (pcs.size() > 1) {  // different call sites: the same source line after inlining or unrolling is fine
    std::set<std::string> lines;
    for (uintptr_t pc : pcs) lines.insert(source_line(pc));
    if (lines.size() > 1) {
      const ThreadState* other = nullptr;
      for (unsigned i = 0; i < w.nthreads && !other; ++i)
        if (w.threads[i].status == ThreadStatus::at_barrier && source_line(w.threads[i].wait_pc) != source_line(first->wait_pc))
          other = &w.threads[i];
      report(*first, ReportKind::divergent_barrier, first->wait_pc,
             "threads of the block wait at different __syncthreads (" + std::to_string(lines.size()) + " call sites)",
             false, 0, other->tid, other->wait_pc);
    }
  }
  ++w.epoch;
  order_all_warps(w);
  w.at_barrier = 0;
  for (unsigned i = 0; i < w.nthreads; ++i)
    if (w.threads[i].status == ThreadStatus::at_barrier) make_ready(w, w.threads[i]);
}

/// No thread can run: name who waits where.
void report_deadlock(Worker& w) {
  ThreadState* waiting = nullptr;
  ThreadState* grouped = nullptr;
  int barrier = 0, warp = 0, group = 0;
  for (unsigned i = 0; i < w.nthreads; ++i) {
    ThreadState& t = w.threads[i];
    if (t.status == ThreadStatus::at_barrier) ++barrier;
    if (t.status == ThreadStatus::at_warp) {
      ++warp;
      if (!waiting) waiting = &t;
    }
    if (t.status == ThreadStatus::at_group && ++group == 1) grouped = &t;
  }
  std::string what;
  if (warp) what = std::to_string(warp) + " threads wait in warp collectives for lanes that exited or wait elsewhere";
  if (group) {
    what += std::string(what.empty() ? "" : ", ") + std::to_string(group) + " threads wait in named barriers, " +
            "mbarriers or warpgroup collectives (thread (" + std::to_string(grouped->pos.thread.x) + "," +
            std::to_string(grouped->pos.thread.y) + "," + std::to_string(grouped->pos.thread.z) +
            "): " + describe_group_wait(w, *grouped) + ")";
    if (!waiting) waiting = grouped;
  }
  const std::string sep = what.empty() ? "" : ", ";
  if (barrier) what += sep + std::to_string(barrier) + " threads wait at __syncthreads";
  if (w.exited) what += (what.empty() ? "" : ", ") + std::to_string(w.exited) + " threads have exited";
  if (!waiting)
    for (unsigned i = 0; i < w.nthreads && !waiting; ++i)
      if (w.threads[i].status != ThreadStatus::exited) waiting = &w.threads[i];
  report(*waiting, ReportKind::deadlock, waiting->wait_pc, "the block cannot proceed: " + what, true);
}

void run_block(Worker& w, Launch& L, unsigned linear) {
  const dim3 g = L.config.grid, b = L.config.block;
  w.launch = &L;
  w.block = uint3{linear % g.x, (linear / g.x) % g.y, linear / (g.x * g.y)};
  w.block_linear = linear;
  uint64_t order = L.order_key ? mix(L.order_key ^ linear) : 0;
  w.nthreads = L.threads_per_block;
  ++w.block_gen;
  ++w.epoch;
  w.regions.clear();
  w.dynamic_bytes = L.config.dynamic_shared;
  if (w.dynamic_bytes) w.regions.push_back(SharedRegion{0, w.dynamic_bytes, nullptr, "dynamic shared memory"});
  w.static_top = (w.dynamic_bytes + 127) / 128 * 128 + 256;  // a redzone after the dynamic part
  w.static_bytes = 0;
  w.at_barrier = w.exited = 0;
  w.abandon = false;
  w.ready.clear();
  w.ready_head = 0;
  for (unsigned i = 0; i < (w.nthreads + 31) / 32; ++i) w.warps[i].open.clear();
  reset_async(w);
  for (unsigned i = 0; i < w.nthreads; ++i) {
    ThreadState& t = w.threads[i];
    t.pos = Position{uint3{i % b.x, (i / b.x) % b.y, i / (b.x * b.y)}, w.block, b, g};
    t.tid = int(i), t.warp = int(i / 32), t.lane = int(i % 32);
    t.pending.clear();
    t.async_groups.clear();
    t.async_open.clear();
    t.async = AsyncThreadState{};
    fiber_init(t.fiber, w.stacks + size_t(i) * w.stack_bytes, w.stack_bytes, fiber_entry, &t);
    w.ready.push_back(int(i));
  }
  while (true) {
    if (order) shuffle_ready(w, order);
    while (w.ready_head < w.ready.size() && !w.abandon) resume(w, w.threads[size_t(w.ready[w.ready_head++])]);
    w.ready.clear();
    w.ready_head = 0;
    if (w.abandon || w.exited == int(w.nthreads)) break;
    bool collectives_open = false;
    for (unsigned i = 0; i < (w.nthreads + 31) / 32; ++i) collectives_open |= !w.warps[i].open.empty();
    if (w.at_barrier > 0 && w.at_barrier + w.exited == int(w.nthreads) && !collectives_open) {
      release_barrier(w);
      continue;
    }
    if (settle_async(w)) continue;
    report_deadlock(w);
    break;
  }
  settle_async(w);  // TMA loads nobody waited for still land, as on the GPU
  w.launch = nullptr;
}

void worker_main(Pool& p, Worker& w) {
  uint64_t seen = 0;
  while (true) {
    Launch* L;
    {
      std::unique_lock<std::mutex> lock(p.mutex);
      p.wake.wait(lock, [&] { return p.job_id != seen; });
      seen = p.job_id;
      L = p.job;
    }
    const dim3 g = L->config.grid;
    const unsigned blocks = g.x * g.y * g.z;
    for (unsigned b; !L->stopped.load(std::memory_order_relaxed) && (b = L->next_block++) < blocks;)
      run_block(w, *L, block_in_order(b, blocks, L->order_key));
    std::lock_guard<std::mutex> lock(p.mutex);
    if (--p.busy == 0) p.done.notify_all();
  }
}

Pool& pool() {
  static Pool* p = [] {
    auto* q = new Pool;  // never destroyed: workers run until the process ends
    const char* env = std::getenv("MOE_EMU_WORKERS");
    int n = env ? std::atoi(env) : int(std::thread::hardware_concurrency());
    n = std::max(1, std::min(n, 64));
    for (int i = 0; i < n; ++i) q->workers.push_back(make_worker(i));
    for (int i = 0; i < n; ++i) {
      q->threads.emplace_back(worker_main, std::ref(*q), std::ref(*q->workers[size_t(i)]));
      q->threads.back().detach();
    }
    return q;
  }();
  return *p;
}

cudaError_t error_for(const std::vector<RawReport>& reports) {
  for (const RawReport& r : reports) {
    if (!r.fatal) continue;
    if (r.kind == ReportKind::out_of_bounds || r.kind == ReportKind::wrong_device) return cudaErrorIllegalAddress;
    if (r.kind == ReportKind::misaligned || r.kind == ReportKind::wmma_misuse) return cudaErrorMisalignedAddress;
    if (r.kind == ReportKind::trap) return cudaErrorIllegalInstruction;
    if (r.kind == ReportKind::launch_bound) return cudaErrorLaunchOutOfResources;
  }
  return cudaErrorLaunchFailure;
}

std::string site(const LaunchConfig& c) { return std::string(c.site.file_name()) + ":" + std::to_string(c.site.line()); }
}  // namespace

ThreadState& current_thread() {
  if (!tls_thread) {
    std::fprintf(stderr, "moe-emu: device code ran outside a kernel launch\n");
    std::abort();
  }
  return *tls_thread;
}

void yield_to_scheduler(ThreadState& t) { fiber_switch(t.fiber, t.worker->scheduler); }

void wait_in_group(ThreadState& t, GroupWait kind, const void* object, uintptr_t pc) {
  t.status = ThreadStatus::at_group;
  t.async.wait = kind;
  t.async.wait_object = object;
  t.wait_pc = pc;
  yield_to_scheduler(t);
  t.async.wait = GroupWait::none;
  t.async.wait_object = nullptr;
}

void make_ready(Worker& w, ThreadState& t) {
  t.status = ThreadStatus::ready;
  w.ready.push_back(t.tid);
}

void report(ThreadState& t, ReportKind kind, uintptr_t pc, std::string detail, bool fatal, uintptr_t addr, int other_tid,
            uintptr_t other_pc) {
  Worker& w = *t.worker;
  Launch& L = *w.launch;
  RawReport r{kind, pc, other_pc, w.block, t.pos.thread, {}, other_tid >= 0, addr, std::move(detail), fatal};
  if (other_tid >= 0) r.other_thread = w.threads[size_t(other_tid)].pos.thread;
  {
    std::lock_guard<std::mutex> lock(L.mutex);
    const bool seen = std::any_of(L.reports.begin(), L.reports.end(), [&](const RawReport& o) {
      return o.kind == kind && o.pc == pc && o.other_pc == other_pc;
    });
    if (!seen) {
      if (L.reports.size() < 20) L.reports.push_back(std::move(r));
      else ++L.dropped_reports;
    }
  }
  if (!fatal) return;
  w.abandon = true;
  L.stopped = true;
  if (tls_thread == &t) yield_to_scheduler(t);  // the faulting access never happens: the block is dropped
}

void syncthreads() {
  ThreadState& t = current_thread();
  flush_pending_writes(t);
  t.status = ThreadStatus::at_barrier;
  t.wait_pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  ++t.worker->at_barrier;
  yield_to_scheduler(t);
}

void trap() {
  ThreadState& t = current_thread();
  report(t, ReportKind::trap, reinterpret_cast<uintptr_t>(__builtin_return_address(0)), "the kernel called __trap()",
         true);
  std::abort();  // not reached: report() never resumes a faulting thread
}

namespace {
/// Runs a queued launch on the worker pool and publishes its reports (the error of the operation).
cudaError_t run_launch(const LaunchConfig& c, void (*run)(void*), void* ctx, const void* params, size_t bytes,
                       int device, unsigned threads, uint32_t serial) {
  Pool& p = pool();
  std::lock_guard<std::mutex> serial_launches(p.launch_mutex);
  Launch L;
  L.config = c;
  L.run = run;
  L.ctx = ctx;
  L.params_begin = reinterpret_cast<uintptr_t>(params);
  L.params_end = L.params_begin + bytes;
  L.device = device;
  L.threads_per_block = threads;
  const uint64_t seed = schedule_seed().load();
  L.order_key = seed ? mix(seed ^ mix(serial)) | 1 : 0;
  static const bool trace = std::getenv("MOE_EMU_TRACE") != nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::unique_lock<std::mutex> lock(p.mutex);
    p.job = &L;
    p.busy = int(p.workers.size());
    ++p.job_id;
    p.wake.notify_all();
    p.done.wait(lock, [&] { return p.busy == 0; });
  }
  KernelRecord* k = L.kernel.load();
  if (k) {
    k->launched = true;
    unsigned prev = k->max_threads.load();
    while (prev < L.threads_per_block && !k->max_threads.compare_exchange_weak(prev, L.threads_per_block)) {
    }
    size_t dyn = k->max_dynamic_shared.load();
    while (dyn < L.config.dynamic_shared &&
           !k->max_dynamic_shared.compare_exchange_weak(dyn, L.config.dynamic_shared)) {
    }
  }
  const std::string name = k ? k->name : "(launched at " + site(c) + ")";
  const dim3 g = c.grid, b = c.block;
  if (trace)
    std::fprintf(stderr, "moe-emu: %s grid (%u,%u,%u) block (%u,%u,%u) dynamic shared %zu: %.2f ms\n", name.c_str(), g.x,
                 g.y, g.z, b.x, b.y, b.z, c.dynamic_shared,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  if (L.reports.empty()) return cudaSuccess;
  const std::string first = publish_reports(name, L.reports, L.dropped_reports);
  return set_message(error_for(L.reports), first);
}
}  // namespace

uint64_t set_schedule_seed(uint64_t seed) { return schedule_seed().exchange(seed); }

void launch_kernel(const LaunchConfig& c, void (*run)(void*), std::shared_ptr<void> ctx, const void* params,
                   size_t bytes) {
  const int device = current_device(), sdev = stream_device(c.stream);
  if (sdev < 0) {
    set_error(cudaErrorInvalidResourceHandle, "kernel launch at " + site(c) + ": the stream was destroyed");
    return;
  }
  if (sdev != device) {
    set_error(cudaErrorInvalidResourceHandle, "kernel launch at " + site(c) + ": the stream belongs to cuda:" +
                                                  std::to_string(sdev) + " but cuda:" + std::to_string(device) +
                                                  " is the current device");
    return;
  }
  const dim3 g = c.grid, b = c.block;
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  if (!g.x || !g.y || !g.z || !threads || g.x > 2147483647u || g.y > 65535 || g.z > 65535 || b.x > 1024 ||
      b.y > 1024 || b.z > 64 || threads > 1024) {
    set_error(cudaErrorInvalidConfiguration,
              "kernel launch at " + site(c) + ": grid (" + std::to_string(g.x) + "," + std::to_string(g.y) + "," +
                  std::to_string(g.z) + ") or block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," +
                  std::to_string(b.z) + ") is outside CUDA's limits");
    return;
  }
  if (1ull * g.x * g.y * g.z > 0xffffffffull) {
    set_error(cudaErrorInvalidConfiguration, "kernel launch at " + site(c) + ": more than 2^32 blocks");
    return;
  }
  const size_t limit = dynamic_shared_limit(device, c.kernel);
  if (c.dynamic_shared > limit) {
    set_error(cudaErrorInvalidValue, "kernel launch at " + site(c) + ": " + std::to_string(c.dynamic_shared) +
                                         " bytes of dynamic shared memory exceed the kernel's limit of " +
                                         std::to_string(limit) + " on cuda:" + std::to_string(device) +
                                         " (cudaFuncSetAttribute(MaxDynamicSharedMemorySize) on that device raises it)");
    return;
  }
  enqueue(stream_id(c.stream), OpKind::kernel, "kernel launch at " + call_site(c.site.file_name(), c.site.line()),
          [=](const Op& op) { return run_launch(c, run, ctx.get(), params, bytes, device, unsigned(threads), op.serial); });
}

}  // namespace moe_emu
