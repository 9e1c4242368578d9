// CUDA emulator: the memory checker (emu/README.md). Emulated .cu sources are compiled with
// -fsanitize=thread only for its instrumentation: every load and store calls __tsan_readN /
// __tsan_writeN, implemented here (no ThreadSanitizer runtime is linked). An access by an emulated
// thread is classified by address:
//   its fiber stack, the launch's argument copy, the emulator's own data, constant program data: fine;
//   shared memory: inside a __shared__ variable or the dynamic part (else out of bounds), initialised
//     in this block (else an uninitialised read), not waiting for a cp.async copy, and not racing;
//   anything else: inside a live device allocation (or pinned memory) of the launch's device, then
//     the device-memory shadow (global_shadow.h: never-written bytes, races between blocks, streams).
// Every access must be naturally aligned (the GPU faults otherwise). Races: between two barriers of
// the block (an epoch), two accesses to a byte by different threads race when at least one is a write
// that changes the byte's value and, for two lanes of one warp, no __syncwarp naming both came between
// them. Writes are judged at the writer's next sync point, when their values are known (so writes of
// the value already there are allowed, as some kernels do on purpose; a byte's first write in a block
// always counts as a change). Covered by tests/emu/checker_test.cpp.
#include <link.h>

#include <cstdio>
#include <cstring>

#include "async_ops.h"
#include "global_shadow.h"
#include "memory.h"
#include "state.h"

namespace moe_emu {
namespace {

struct Image {
  uintptr_t begin = 0, end = 0;  // the main program's loaded segments
};
const Image& program_image() {
  static const Image image = [] {
    Image r;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
          auto* img = static_cast<Image*>(data);
          if (img->end) return 1;  // the first object is the main program
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const auto& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD) continue;
            const uintptr_t b = info->dlpi_addr + ph.p_vaddr, e = b + ph.p_memsz;
            if (!img->begin || b < img->begin) img->begin = b;
            if (e > img->end) img->end = e;
          }
          return 1;
        },
        &r);
    return r;
  }();
  return image;
}

std::string hex(uintptr_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%lx", static_cast<unsigned long>(v));
  return b;
}

std::string access_text(bool write, size_t bytes) {
  return std::string(write ? "write" : "read") + " of " + std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

std::string shared_place(const Worker& w, uintptr_t addr) {
  const size_t off = addr - reinterpret_cast<uintptr_t>(w.arena);
  const SharedRegion* r = shared_region(w, addr, 1);
  if (!r) return "shared offset " + std::to_string(off);
  return std::string(r->key ? "__shared__ " : "") + r->name + " + " + std::to_string(off - r->begin);
}

bool readers_unordered(const Worker& w, const ShadowByte& b, size_t off, const ThreadState& t) {
  if (b.r_warp >= 0 && b.r_warp != t.warp) return w.async.knows[t.warp][b.r_warp] <= b.r_seq;
  if (b.r_warp < 0) {  // readers in several warps: each warp's last read, where the stamps are kept
    if (!w.async.read_stamps) return true;
    const uint32_t* stamps = w.async.read_stamps + off * kBlockWarps;
    for (int v = 0; v < kBlockWarps; ++v)
      if (v != t.warp && stamps[v] >= w.async.knows[t.warp][v]) return true;
    return false;  // the lanes of its own warp: not told apart here
  }
  if (w.async.knows[t.warp][t.warp] > b.r_seq) return false;  // a named barrier or mbarrier ordered the warp
  unsigned lanes = b.r_lanes & ~(1u << t.lane);
  for (int l = 0; lanes; ++l, lanes >>= 1)
    if ((lanes & 1u) && w.warps[size_t(t.warp)].common_sync(l, t.lane) <= b.r_seq) return true;
  return false;
}

/// A write of the running thread to arena byte `off` whose effect is known: check it, then record it.
void finalize_write(ThreadState& t, size_t off, bool changed, uintptr_t pc) {
  Worker& w = *t.worker;
  ShadowByte& b = w.shadow[off];
  const uintptr_t addr = reinterpret_cast<uintptr_t>(w.arena) + off;
  if (changed && b.w_epoch == w.epoch && b.w_tid != t.tid && !ordered_before(w, b.w_tid, b.w_seq, t))
    report(t, ReportKind::race, pc,
           "write changes " + shared_place(w, addr) + ", which another thread wrote with no barrier between", false,
           addr, b.w_tid, w.shadow_pcs[off].write);
  else if (changed && b.r_epoch == w.epoch && readers_unordered(w, b, off, t))
    report(t, ReportKind::race, pc,
           "write changes " + shared_place(w, addr) + ", which another thread read with no barrier between", false,
           addr, b.r_tid, w.shadow_pcs[off].read);
  b.w_changed = (b.w_epoch == w.epoch && b.w_tid == t.tid) ? (b.w_changed | changed) : changed;
  b.w_tid = uint16_t(t.tid);
  b.w_epoch = w.epoch;
  b.w_seq = w.sync_counter;
  b.async_proxy = 0;
  w.shadow_pcs[off].write = pc;
}

void shared_access(ThreadState& t, uintptr_t a, size_t bytes, bool write, uintptr_t pc, bool atomic) {
  Worker& w = *t.worker;
  if (!shared_region(w, a, bytes)) {
    report(t, ReportKind::out_of_bounds, pc,
           access_text(write, bytes) + " at " + shared_place(w, a) + " is outside every __shared__ variable and the " +
               std::to_string(w.dynamic_bytes) + " bytes of dynamic shared memory",
           true, a);
    return;
  }
  const size_t off = a - reinterpret_cast<uintptr_t>(w.arena);
  if (write && !atomic) {
    if (t.async.reads_in_flight()) check_in_flight_write(t, off, bytes, pc);
    for (size_t i = 0; i < bytes; ++i)
      if (w.shadow[off + i].async_pending) {
        report(t, ReportKind::async_in_flight, pc,
               access_text(write, bytes) + " of " + shared_place(w, a) +
                   " while an asynchronous copy into it (cp.async or TMA) is in flight: its wait comes first",
               false, a);
        break;
      }
    for (size_t done = 0; done < bytes; done += 16) {  // ranges above 16 bytes: several records
      PendingWrite p{a + done, pc, uint32_t(std::min<size_t>(16, bytes - done)), 0, {}};
      std::memcpy(p.old, w.arena + off + done, p.size);
      for (uint32_t i = 0; i < p.size; ++i)
        if (w.shadow[off + done + i].init_gen != w.block_gen) p.fresh |= uint16_t(1u << i);
      t.pending.push_back(p);
    }
    for (size_t i = 0; i < bytes; ++i) {
      ShadowByte& b = w.shadow[off + i];
      b.init_gen = w.block_gen;
      b.pending_seg = t.segment;
    }
    return;
  }
  // Reads (and atomics): one pass that checks each byte and records the read.
  const unsigned me = 1u << t.lane;
  bool reported = false;
  for (size_t i = 0; i < bytes; ++i) {
    ShadowByte& b = w.shadow[off + i];
    if (!reported) {
      if (b.async_pending) {
        report(t, ReportKind::async_in_flight, pc,
               access_text(write, bytes) + " of " + shared_place(w, a) +
                   " before the asynchronous copy into it has landed (cp.async: no wait for its group; TMA: no wait on "
                   "its mbarrier)",
               false, a);
        reported = true;
      } else if (b.init_gen != w.block_gen) {
        report(t, ReportKind::uninitialized_read, pc,
               access_text(false, bytes) + " of " + shared_place(w, a) + ", which no thread of the block has written",
               false, a);
        reported = true;
      } else if (!atomic && b.pending_seg != t.segment && b.w_epoch == w.epoch && b.w_tid != t.tid && b.w_changed &&
                 !ordered_before(w, b.w_tid, b.w_seq, t)) {
        report(t, ReportKind::race, pc,
               "read of " + shared_place(w, a) + ", which another thread wrote with no barrier between", false, a,
               b.w_tid, w.shadow_pcs[off + i].write);
        reported = true;
      }
    }
    if (atomic) continue;  // atomics do not race with each other; their bytes stay as they were for the checker
    if (w.async.read_stamps) w.async.read_stamps[(off + i) * kBlockWarps + size_t(t.warp)] = w.sync_counter;
    if (b.r_epoch != w.epoch) {
      b.r_epoch = w.epoch, b.r_tid = uint16_t(t.tid), b.r_warp = int16_t(t.warp), b.r_lanes = me;
      w.shadow_pcs[off + i].read = pc;
    } else if (b.r_warp != t.warp) {
      b.r_warp = -2;
    } else {
      b.r_lanes |= me;
    }
    b.r_seq = w.sync_counter;
  }
}

void global_access(ThreadState& t, uintptr_t a, size_t bytes, bool write, bool atomic, uintptr_t pc) {
  Worker& w = *t.worker;
  const Launch& L = *w.launch;
  if (a >= L.params_begin && a + bytes <= L.params_end) return;
  const uint64_t gen = memory_generation();
  if (gen != w.cache_gen) {
    for (Worker::CachedRange& r : w.cache) r = Worker::CachedRange{};
    w.cache_gen = gen;
  }
  const Worker::CachedRange* hit = nullptr;
  for (const Worker::CachedRange& r : w.cache)
    if (a >= r.begin && a + bytes <= r.end) hit = &r;
  if (!hit) {
    const Located at = locate(a, bytes);
    if (!at.ok) {
      const Image& img = program_image();
      if (!write && a >= img.begin && a + bytes <= img.end) return;  // constant data of the program
      report(t, ReportKind::out_of_bounds, pc, access_text(write, bytes) + " at " + hex(a) + " is " + at.problem, true,
             a);
      return;
    }
    Worker::CachedRange& slot = w.cache[w.cache_next++ % 4];
    slot = Worker::CachedRange{at.begin, at.end, at.device};
    hit = &slot;
  }
  if (hit->device != kHostDevice && hit->device != L.device)
    report(t, ReportKind::wrong_device, pc,
           access_text(write, bytes) + " at " + hex(a) + " is memory of cuda:" + std::to_string(hit->device) +
               " but the kernel runs on cuda:" + std::to_string(L.device) + " (no peer access)",
           true, a);
  else if (hit->device != kHostDevice)
    shadow_kernel_access(t, a, bytes, write, atomic, pc);
}

/// An instrumented access; `aligned`: the compiler emitted it as an N-byte aligned access (a GPU would
/// fault on a misaligned address), else its alignment is unknown (split into smaller accesses).
inline void hook(void* addr, size_t bytes, bool write, bool aligned, void* ra) {
  ThreadState* t = tls_thread;
  if (!t || bytes == 0) return;  // host code
  check_access(*t, reinterpret_cast<uintptr_t>(addr), bytes, write, reinterpret_cast<uintptr_t>(ra), false, aligned);
}
}  // namespace

bool ordered_before(const Worker& w, int other_tid, uint32_t seq, const ThreadState& t) {
  if (w.async.knows[t.warp][other_tid / kWarpSize] > seq) return true;  // the warp's barriers and mbarriers
  return other_tid / kWarpSize == t.warp && w.warps[size_t(t.warp)].common_sync(other_tid % kWarpSize, t.lane) > seq;
}

void check_access(ThreadState& t, uintptr_t a, size_t bytes, bool write, uintptr_t pc, bool atomic, bool aligned) {
  Worker& w = *t.worker;
  if (a - w.stacks_begin() < w.stacks_end() - w.stacks_begin()) {  // fiber stacks: registers, free unless owned
    if (!t.async.poisoned.empty()) check_poisoned(t, a, bytes, write, pc);
    return;
  }
  const auto internal = reinterpret_cast<uintptr_t>(w.threads.data());
  if (a - internal < w.threads.size() * sizeof(ThreadState)) return;  // threadIdx and friends
  if (a == reinterpret_cast<uintptr_t>(&tls_position)) return;
  if (aligned && bytes > 1 && a % bytes) {
    report(t, ReportKind::misaligned, pc,
           access_text(write, bytes) + " at " + hex(a) + " is not " + std::to_string(bytes) + "-byte aligned", true, a);
    return;
  }
  if (in_arena(w, a)) shared_access(t, a, bytes, write, pc, atomic);
  else global_access(t, a, bytes, write, atomic, pc);
}

void flush_pending_writes(ThreadState& t) {
  if (t.pending.empty()) return;
  Worker& w = *t.worker;
  const auto arena = reinterpret_cast<uintptr_t>(w.arena);
  for (const PendingWrite& p : t.pending)
    for (uint32_t i = 0; i < p.size; ++i) {
      const size_t off = p.addr + i - arena;
      ShadowByte& b = w.shadow[off];
      if (b.pending_seg != t.segment) continue;  // an earlier record of this segment covered the byte
      b.pending_seg = 0;
      finalize_write(t, off, (p.fresh >> i & 1u) || w.arena[off] != p.old[i], p.pc);
    }
  t.pending.clear();
}

void note_async_write(ThreadState& t, uintptr_t addr, size_t bytes, uintptr_t pc) {
  Worker& w = *t.worker;
  const size_t off = addr - reinterpret_cast<uintptr_t>(w.arena);
  for (size_t i = 0; i < bytes; ++i)
    if (w.shadow[off + i].async_pending) {
      report(t, ReportKind::async_in_flight, pc,
             "a TMA load into " + shared_place(w, addr + i) + ", where an asynchronous copy is still in flight", false,
             addr + i);
      break;
    }
  for (size_t i = 0; i < bytes; ++i) {
    finalize_write(t, off + i, true, pc);
    ShadowByte& b = w.shadow[off + i];
    b.init_gen = w.block_gen;
    b.async_pending = 1;
    b.async_proxy = 1;
  }
}

void land_async_write(Worker& w, uintptr_t addr, size_t bytes) {
  const size_t off = addr - reinterpret_cast<uintptr_t>(w.arena);
  for (size_t i = 0; i < bytes; ++i) w.shadow[off + i].async_pending = 0;
}

void record_shared_write(ThreadState& t, uintptr_t addr, const uint8_t* old_bytes, size_t bytes, uintptr_t pc) {
  Worker& w = *t.worker;
  const size_t off = addr - reinterpret_cast<uintptr_t>(w.arena);
  for (size_t i = 0; i < bytes; ++i) {
    ShadowByte& b = w.shadow[off + i];
    const bool fresh = b.init_gen != w.block_gen;
    b.init_gen = w.block_gen;
    b.async_pending = 0;
    finalize_write(t, off + i, fresh || w.arena[off + i] != old_bytes[i], pc);
  }
}

}  // namespace moe_emu

// The instrumentation's entry points (GCC's -fsanitize=thread calls these; no TSan runtime is linked).
#define MOE_EMU_HOOKS(N)                                                                                             \
  void __tsan_read##N(void* a) { moe_emu::hook(a, N, false, true, __builtin_return_address(0)); }                     \
  void __tsan_write##N(void* a) { moe_emu::hook(a, N, true, true, __builtin_return_address(0)); }                     \
  void __tsan_unaligned_read##N(void* a) { moe_emu::hook(a, N, false, false, __builtin_return_address(0)); }          \
  void __tsan_unaligned_write##N(void* a) { moe_emu::hook(a, N, true, false, __builtin_return_address(0)); }          \
  void __tsan_volatile_read##N(void* a) { moe_emu::hook(a, N, false, true, __builtin_return_address(0)); }            \
  void __tsan_volatile_write##N(void* a) { moe_emu::hook(a, N, true, true, __builtin_return_address(0)); }
extern "C" {
MOE_EMU_HOOKS(1)
MOE_EMU_HOOKS(2)
MOE_EMU_HOOKS(4)
MOE_EMU_HOOKS(8)
MOE_EMU_HOOKS(16)
void __tsan_read_range(void* a, unsigned long n) { moe_emu::hook(a, n, false, false, __builtin_return_address(0)); }
void __tsan_write_range(void* a, unsigned long n) { moe_emu::hook(a, n, true, false, __builtin_return_address(0)); }
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
}
