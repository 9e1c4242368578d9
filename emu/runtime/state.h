// CUDA emulator (emu/README.md): the runtime's state. A launch runs its blocks on a pool of workers
// (OS threads); a worker runs one block at a time, each emulated thread of the block on a fiber of
// the worker, and owns the block's shared memory (an arena) with one shadow record per byte for the
// checker. Only the worker's OS thread touches its block, so nothing here needs a lock except the
// launch's report list.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "async_state.h"
#include "cuda_runtime.h"
#include "fiber.h"
#include "reports.h"

namespace moe_emu {

constexpr int kMaxThreads = 1024, kWarpSize = 32, kMaxWarps = kMaxThreads / kWarpSize;
constexpr size_t kStaticSharedLimit = 48 * 1024;  // static __shared__ per block, every architecture

struct KernelRecord {
  std::string name;  // "moe::cuda::(anonymous namespace)::softmax_kernel<float, 4>"
  std::string file;  // the source file of its body
  std::atomic<bool> launched{false};
  std::atomic<unsigned> max_threads{0};
  std::atomic<size_t> max_dynamic_shared{0};
};

struct Launch {
  LaunchConfig config;
  void (*run)(void*) = nullptr;
  void* ctx = nullptr;
  uintptr_t params_begin = 0, params_end = 0;  // the argument copy: readable by every thread
  int device = 0;
  unsigned threads_per_block = 0;
  std::atomic<KernelRecord*> kernel{nullptr};
  std::atomic<unsigned> next_block{0};
  uint64_t order_key = 0;  // MOE_EMU_SCHEDULE_SEED mixed with the launch: the order of blocks and threads (0: in order)
  std::atomic<bool> stopped{false};  // a fatal report: the remaining blocks do not run
  std::mutex mutex;
  std::vector<RawReport> reports;
  size_t dropped_reports = 0;
};

/// at_group: waiting in a named barrier, on an mbarrier phase or in a warpgroup collective
/// (ThreadState::wait_object says which).
enum class ThreadStatus { ready, at_barrier, at_warp, at_group, exited };

struct PendingWrite {
  uintptr_t addr;
  uintptr_t pc;
  uint32_t size;
  uint16_t fresh;  // bit i: byte i held no value of this block yet (its first write always changes it)
  uint8_t old[16];
};
struct AsyncCopy {
  uintptr_t dst, src;
  uint32_t bytes, zero_fill;
  uintptr_t pc;
};

struct Worker;

struct ThreadState {
  Position pos;  // first: tls_position points here
  Worker* worker = nullptr;
  int tid = 0, warp = 0, lane = 0;  // linear index in the block, warp, lane
  ThreadStatus status = ThreadStatus::ready;
  uintptr_t wait_pc = 0;  // where it waits (barrier or warp collective)
  uint32_t segment = 0;   // id of the code span since its last sync point (pending writes)
  FiberContext fiber;
  std::vector<PendingWrite> pending;
  std::vector<std::vector<AsyncCopy>> async_groups;  // committed groups, oldest first
  std::vector<AsyncCopy> async_open;                 // issued, not yet committed
  uint64_t result = 0;         // the result of the warp collective it waited in
  uint64_t shuffle_value = 0;  // the value it offers to a shuffle
  AsyncThreadState async;      // Hopper's asynchronous operations in flight and what it waits for (async_state.h)
};

enum class CollectiveKind {
  syncwarp,
  shuffle,
  ballot,
  match_any,
  wmma_load_a,
  wmma_load_b,
  wmma_load_c,
  wmma_store,
  wmma_mma,
  mma_sync,
  ldmatrix,
  elect
};

struct Collective {
  CollectiveKind kind;
  unsigned mask = 0, arrived = 0;
  Shuffle shuffle = Shuffle::index;
  int arg = 0, width = 32;
  uint64_t values[kWarpSize] = {};
  const void* mma_in[kWarpSize][3] = {};  // a, b, c of each lane (wmma: float[8]; mma.sync: u32[4], u32[2], float[4])
  void* mma_out[kWarpSize] = {};
  uint8_t rows[kWarpSize][16] = {};  // ldmatrix: the 16 bytes of the row each lane addressed
};

struct WarpState {
  std::vector<Collective> open;        // collectives some lanes wait in
  uint32_t last_full_sync = 0;         // sync counter value of the last __syncwarp of all 32 lanes
  uint32_t pair_sync[kWarpSize][kWarpSize] = {};  // ... of the last partial __syncwarp naming both lanes
  uint32_t common_sync(int a, int b) const {
    return pair_sync[a][b] > last_full_sync ? pair_sync[a][b] : last_full_sync;
  }
};

/// One shadow record per byte of shared memory (the checker's view); kept small (40 bytes), the program
/// counters of the last accesses, needed only for reports, are in ShadowPcs beside it.
struct ShadowByte {
  uint32_t init_gen;     // == Worker::block_gen: written in this block
  uint32_t pending_seg;  // segment of a write whose value is not known yet
  uint32_t w_epoch, w_seq;
  uint32_t r_epoch, r_seq, r_lanes;
  uint16_t w_tid, r_tid;
  int16_t r_warp;  // -2: readers in several warps
  uint8_t w_changed, async_pending;
  uint8_t async_proxy;  // 1: last written by the async proxy (TMA), which wgmma reads without a proxy fence
};
struct ShadowPcs {
  uintptr_t write, read;  // the last write, the first read of the epoch
};

struct SharedRegion {
  size_t begin, end;
  const SharedKey* key;  // nullptr: the dynamic part
  const char* name;
};

struct Worker {
  int id = 0;
  char* stacks = nullptr;  // kMaxThreads fiber stacks
  size_t stack_bytes = 0;
  unsigned char* arena = nullptr;  // shared memory of the running block
  size_t arena_bytes = 0;
  std::vector<ShadowByte> shadow;
  std::vector<ShadowPcs> shadow_pcs;
  std::vector<ThreadState> threads;
  std::vector<WarpState> warps;
  FiberContext scheduler;

  // The running block.
  Launch* launch = nullptr;
  uint3 block{};
  uint32_t block_linear = 0;
  unsigned nthreads = 0;
  uint32_t block_gen = 0, epoch = 0, sync_counter = 0, segment_counter = 0;
  std::vector<SharedRegion> regions;  // sorted by begin
  size_t static_top = 0, static_bytes = 0, dynamic_bytes = 0;
  std::vector<int> ready;  // thread ids to run, FIFO
  size_t ready_head = 0;
  int at_barrier = 0, exited = 0;
  bool abandon = false;  // a fatal report in this block: stop running it
  AsyncBlockState async;  // named barriers, mbarriers, warpgroup collectives, ordering between warps
  // The last global ranges found (checker.cpp): valid while memory_generation() == cache_gen.
  struct CachedRange {
    uintptr_t begin = 0, end = 0;
    int device = 0;
  };
  CachedRange cache[4];
  unsigned cache_next = 0;
  uint64_t cache_gen = 0;
  uintptr_t shadow_page_number = ~uintptr_t(0);  // the device-memory shadow page found last (global_shadow.cpp)
  void* shadow_page = nullptr;

  uintptr_t stacks_begin() const { return reinterpret_cast<uintptr_t>(stacks); }
  uintptr_t stacks_end() const { return stacks_begin() + stack_bytes * kMaxThreads; }
};

extern thread_local constinit ThreadState* tls_thread;

/// The calling emulated thread; fails loudly when device code runs outside a kernel.
ThreadState& current_thread();

/// Every write of the running thread since its last sync point is checked and made known (checker.cpp).
void flush_pending_writes(ThreadState& t);
/// Queues a cp.async copy of `bytes` (4, 8 or 16; the last `zero_fill` of them zeros) into shared memory.
void queue_async_copy(ThreadState& t, void* dst, const void* src, size_t bytes, size_t zero_fill, uintptr_t pc);
/// A shared-memory write whose values are known (cp.async landing): checked like a flushed write.
/// Lands every cp.async copy of the thread, committed or not (its end: copies still land on the GPU).
void pipeline_finish(ThreadState& t);
void record_shared_write(ThreadState& t, uintptr_t addr, const uint8_t* old_bytes, size_t bytes, uintptr_t pc);
/// Whether addr is inside the running block's shared memory (arena), and in a variable of it.
bool in_arena(const Worker& w, uintptr_t addr);
const SharedRegion* shared_region(const Worker& w, uintptr_t addr, size_t bytes);
/// Checks an access by the running thread like an instrumented load or store (atomics, async copies);
/// `aligned`: the access must be naturally aligned.
void check_access(ThreadState& t, uintptr_t addr, size_t bytes, bool write, uintptr_t pc, bool atomic, bool aligned);

/// Whether an access of thread `other_tid` with sync stamp `seq` in the current epoch is ordered before
/// thread t's next one: by a __syncwarp naming both lanes, or for another warp by a named barrier or
/// mbarrier chain (happens_before.cpp).
bool ordered_before(const Worker& w, int other_tid, uint32_t seq, const ThreadState& t);
/// Records a report of the running thread (fatal ones stop its block and the launch).
/// `other_tid` (-1: none) and `other_pc` name the other side of a race or a divergence.
void report(ThreadState& t, ReportKind kind, uintptr_t pc, std::string detail, bool fatal, uintptr_t addr = 0,
            int other_tid = -1, uintptr_t other_pc = 0);
/// Suspends the running thread until the scheduler resumes it.
void yield_to_scheduler(ThreadState& t);
/// Suspends the running thread in a named barrier, an mbarrier wait or a warpgroup collective (`object`).
void wait_in_group(ThreadState& t, GroupWait kind, const void* object, uintptr_t pc);
/// A new sync stamp: accesses made before it are ordered before what learns of it.
inline uint32_t next_stamp(Worker& w) { return ++w.sync_counter; }
/// Every warp learns of every access so far (a block-wide barrier opens).
void order_all_warps(Worker& w);
/// Warp `to` learns of what `clock` records (clock[Y]: warp Y's accesses stamped below it).
void learn(Worker& w, int to, const uint32_t (&clock)[kBlockWarps]);
/// `clock` takes in what warp `from` knows and its own accesses up to `stamp`.
void publish(Worker& w, int from, uint32_t stamp, uint32_t (&clock)[kBlockWarps]);
/// A read or write of the thread's registers (fiber stack) that an asynchronous operation owns (wgmma.cpp).
void check_poisoned(ThreadState& t, uintptr_t addr, size_t bytes, bool write, uintptr_t pc);
/// The running block starts: no barrier, mbarrier or warpgroup collective yet; every warp ordered.
void reset_async(Worker& w);
/// No thread can run: lands the TMA loads still deferred; true if that let a waiting thread go on.
bool settle_async(Worker& w);
/// What a thread at_group waits for (a deadlock report).
std::string describe_group_wait(const Worker& w, const ThreadState& t);
/// The thread ends: its TMA stores complete (as on the GPU), a wgmma it never waited for is reported.
void finish_async(ThreadState& t);
/// Maps the per-warp read stamps of the worker's shared memory (first use of warp-specialised sync).
void enable_read_stamps(Worker& w);
/// Marks a waiting thread ready again.
void make_ready(Worker& w, ThreadState& t);

}  // namespace moe_emu
