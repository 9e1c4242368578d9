// CUDA emulator: the shadow of device memory (global_shadow.h). One 24-byte record per 8 bytes, in
// pages of 4 KiB of memory allocated on first touch and kept (zeroed when their memory is fresh again),
// found through a two-level table indexed by the page number. Kernel threads of concurrent blocks
// update records under a spin lock in each record; copies, memsets, library calls and fresh memory
// are handled by the queue's runner between launches. A record names the last writing and reading
// operation (serial and stream) and, within a launch, the block (linear + 1; reads by several blocks
// are kSeveral) and the bytes each touched; `init` has a bit per byte written since allocation.
// Covered by tests/emu/blind_spot_test.cpp.
#include "global_shadow.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "queue.h"
#include "state.h"

namespace moe_emu {
namespace {
constexpr uint32_t kSeveral = 0xffffffffu;
constexpr size_t kPageBits = 12, kLowBits = 17, kHighBits = 48 - kPageBits - kLowBits;

struct Record {
  uint32_t w_serial, r_serial;  // operations that last wrote / read (0: none since allocation)
  uint32_t w_block, r_block;    // within those operations, if kernels: linear block + 1 (0: not a kernel)
  uint16_t w_stream, r_stream;
  uint8_t init, w_mask, r_mask;  // bit i: byte i written since allocation / by w_block / read by r_block
  uint8_t lock;
};
static_assert(sizeof(Record) == 24, "a shadow record per 8 bytes of device memory");
struct Page {
  Record r[(size_t(1) << kPageBits) / 8];
};
using Level = std::atomic<Page*>[size_t(1) << kLowBits];
std::atomic<Level*> g_table[size_t(1) << kHighBits];

Page* page(uintptr_t addr, bool create) {
  const uintptr_t p = addr >> kPageBits;
  std::atomic<Level*>& top = g_table[(p >> kLowBits) & ((uintptr_t(1) << kHighBits) - 1)];
  Level* level = top.load(std::memory_order_acquire);
  if (!level) {
    if (!create) return nullptr;
    auto* fresh = static_cast<Level*>(std::calloc(1, sizeof(Level)));
    if (!top.compare_exchange_strong(level, fresh)) std::free(fresh);
    else level = fresh;
  }
  std::atomic<Page*>& slot = (*level)[p & ((uintptr_t(1) << kLowBits) - 1)];
  Page* pg = slot.load(std::memory_order_acquire);
  if (!pg && create) {
    auto* fresh = static_cast<Page*>(std::calloc(1, sizeof(Page)));
    if (!fresh) {
      std::fprintf(stderr, "moe-emu: out of memory for the device-memory shadow\n");
      std::abort();
    }
    if (!slot.compare_exchange_strong(pg, fresh)) std::free(fresh);
    else pg = fresh;
  }
  return pg;
}

struct Locked {  // a record, locked for the scope
  Record& r;
  explicit Locked(Record& rec) : r(rec) {
    std::atomic_ref<uint8_t> l(r.lock);
    while (l.exchange(1, std::memory_order_acquire)) {
    }
  }
  ~Locked() { std::atomic_ref<uint8_t>(r.lock).store(0, std::memory_order_release); }
};

/// Calls f(record, mask of the bytes of [addr, addr + bytes) in it, address of its first byte) for each
/// record the range covers (only existing ones unless `create`). `w`: a kernel's worker, whose last page
/// found saves the table walk.
template <class F>
void for_records(uintptr_t addr, size_t bytes, bool create, F f, Worker* w = nullptr) {
  for (uintptr_t a = addr; a < addr + bytes;) {
    const uintptr_t granule = a & ~uintptr_t(7), end = std::min<uintptr_t>(granule + 8, addr + bytes);
    const uint8_t mask = uint8_t(((1u << (end - granule)) - 1) & ~((1u << (a - granule)) - 1));
    Page* p;
    if (w && w->shadow_page_number == a >> kPageBits) {
      p = static_cast<Page*>(w->shadow_page);
    } else {
      p = page(a, create);
      if (w && p) w->shadow_page_number = a >> kPageBits, w->shadow_page = p;
    }
    if (p) f(p->r[(a >> 3) & ((size_t(1) << (kPageBits - 3)) - 1)], mask, granule);
    a = end;
  }
}

std::string hex(uintptr_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%lx", static_cast<unsigned long>(v));
  return b;
}

std::string block_text(uint32_t linear, const dim3& g) {
  if (linear == kSeveral) return "other blocks";
  const uint32_t b = linear - 1;
  return "block (" + std::to_string(b % g.x) + "," + std::to_string(b / g.x % g.y) + "," +
         std::to_string(b / (g.x * g.y)) + ")";
}

/// Whether the write or read `serial` of stream `stream` recorded is unordered with `op` (another stream).
bool unordered(uint32_t serial, uint16_t stream, const Op& op) {
  return serial && serial != op.serial && stream != op.stream && !ordered_before(op.clock, stream, serial);
}

std::string stream_race_text(const char* access, uintptr_t addr, bool other_wrote, uint32_t serial, uint16_t stream,
                             const Op& op) {
  return std::string(access) + " of device memory " + hex(addr) + " that " + describe_op(serial) + " on stream " +
         std::to_string(stream) + (other_wrote ? " wrote" : " read") + ", with nothing ordering the two (stream " +
         std::to_string(op.stream) + " here): record an event after it and cudaStreamWaitEvent, or synchronise";
}

/// Whether a plain access of bytes `m` by `block` of `op` would neither be reported nor change the
/// record: the bytes were written, this block (or, for reads, several blocks) already touched them in
/// this launch the same way, and no stream is unordered with it. Read without the lock (a stale view
/// only sends the access to the locked path), this keeps repeated accesses, such as many blocks
/// reading one weight vector, from writing the record's cache line.
bool unchanged(const Record& rec, uint8_t m, bool write, const Op& op, uint32_t block) {
  auto load = [](const auto& field) {
    return std::atomic_ref(const_cast<std::remove_cvref_t<decltype(field)>&>(field)).load(std::memory_order_relaxed);
  };
  if ((load(rec.init) & m) != m) return false;
  const uint32_t w_serial = load(rec.w_serial), r_serial = load(rec.r_serial), r_block = load(rec.r_block);
  const uint8_t r_mask = load(rec.r_mask);
  if (w_serial == op.serial) {
    const bool own = load(rec.w_block) == block, covered = (load(rec.w_mask) & m) == m;
    if (write ? !(own && covered) : !(own || !(load(rec.w_mask) & m))) return false;
  } else if (write || unordered(w_serial, load(rec.w_stream), op)) {
    return false;
  }
  if (write) return r_serial != op.serial || r_block == block || !(r_mask & m);
  return r_serial == op.serial && (r_block == block || r_block == kSeveral) && (r_mask & m) == m;
}

std::string uninit_text(const char* who, uintptr_t addr, size_t bytes) {
  return std::string(who) + " of " + std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes") + " at " + hex(addr) +
         " of device memory never written since its allocation (nothing stored there since cudaMalloc or since the "
         "caching allocator handed it out)";
}
}  // namespace

void shadow_kernel_access(ThreadState& t, uintptr_t addr, size_t bytes, bool write, bool atomic, uintptr_t pc) {
  const Op* op = running_op();
  if (!op) return;
  Worker& w = *t.worker;
  const uint32_t block = w.block_linear + 1;
  ReportKind kind{};
  std::string problem;
  for_records(addr, bytes, true, [&](Record& rec, uint8_t m, uintptr_t) {
    if (!atomic && unchanged(rec, m, write, *op, block)) return;
    Locked l(rec);
    Record& r = l.r;
    if (!problem.empty()) {
    } else if ((!write || atomic) && (r.init & m) != m) {
      kind = ReportKind::uninitialized_read, problem = uninit_text(atomic ? "atomic update" : "read", addr, bytes);
    } else if (unordered(r.w_serial, r.w_stream, *op)) {
      kind = ReportKind::stream_race;
      problem = stream_race_text(write ? "write" : "read", addr, true, r.w_serial, r.w_stream, *op);
    } else if (write && unordered(r.r_serial, r.r_stream, *op)) {
      kind = ReportKind::stream_race, problem = stream_race_text("write", addr, false, r.r_serial, r.r_stream, *op);
    } else if (!atomic && r.w_serial == op->serial && r.w_block && r.w_block != block && (r.w_mask & m)) {
      kind = ReportKind::race;
      problem = std::string(write ? "write" : "read") + " of global memory " + hex(addr) + " that " +
                block_text(r.w_block, t.pos.grid_dim) + " wrote in this launch (blocks of a launch are not ordered)";
    } else if (!atomic && write && r.r_serial == op->serial && r.r_block && r.r_block != block && (r.r_mask & m)) {
      kind = ReportKind::race;
      problem = "write of global memory " + hex(addr) + " that " + block_text(r.r_block, t.pos.grid_dim) +
                " read in this launch (blocks of a launch are not ordered)";
    }
    if (write || atomic) r.init |= m;
    if (atomic) return;  // atomics may meet: they are not recorded for the race check
    if (write) {
      if (r.w_serial == op->serial && r.w_block == block) r.w_mask |= m;
      else r.w_serial = op->serial, r.w_stream = op->stream, r.w_block = block, r.w_mask = m;
      return;
    }
    if (r.r_serial != op->serial || (r.r_block != block && !(r.r_mask & m))) {
      // A new reader (the bytes another block read, if any, are forgotten: a race may go unseen, none is invented).
      r.r_serial = op->serial, r.r_stream = op->stream, r.r_block = block, r.r_mask = m;
    } else if (r.r_block == block) {
      r.r_mask |= m;
    } else {
      r.r_block = kSeveral, r.r_mask &= m;  // bytes that several blocks read
    }
  }, &w);
  if (!problem.empty()) report(t, kind, pc, problem, false, addr);
}

std::string shadow_op_read(uintptr_t addr, size_t bytes, const Op& op, bool check_init) {
  std::string problem;
  for_records(addr, bytes, true, [&](Record& r, uint8_t m, uintptr_t) {
    if (problem.empty() && check_init && (r.init & m) != m) problem = uninit_text("read", addr, bytes);
    else if (problem.empty() && unordered(r.w_serial, r.w_stream, op))
      problem = stream_race_text("read", addr, true, r.w_serial, r.w_stream, op);
    r.r_serial = op.serial, r.r_stream = op.stream, r.r_block = 0, r.r_mask = m;
  });
  return problem;
}

std::string shadow_op_write(uintptr_t addr, size_t bytes, const Op& op) {
  std::string problem;
  for_records(addr, bytes, true, [&](Record& r, uint8_t m, uintptr_t) {
    if (problem.empty() && unordered(r.w_serial, r.w_stream, op))
      problem = stream_race_text("write", addr, true, r.w_serial, r.w_stream, op);
    else if (problem.empty() && unordered(r.r_serial, r.r_stream, op))
      problem = stream_race_text("write", addr, false, r.r_serial, r.r_stream, op);
    r.init |= m;
    r.w_serial = op.serial, r.w_stream = op.stream, r.w_block = 0, r.w_mask = m;
  });
  return problem;
}

std::string shadow_op_copy(uintptr_t dst, uintptr_t src, size_t bytes, const Op& op) {
  std::string problem = shadow_op_read(src, bytes, op, false);
  const std::string w = shadow_op_write(dst, bytes, op);
  if (problem.empty()) problem = w;
  // The copy carries "never written" along: a kernel reading the copy of garbage is reported.
  for_records(src, bytes, false, [&](Record& r, uint8_t m, uintptr_t granule) {
    for (unsigned i = 0; i < 8; ++i)
      if ((m & ~r.init) >> i & 1u)
        for_records(dst + (granule + i - src), 1, false, [](Record& d, uint8_t dm, uintptr_t) { d.init &= uint8_t(~dm); });
  });
  return problem;
}

void shadow_forget(uintptr_t addr, size_t bytes) {
  for_records(addr, bytes, false, [](Record& r, uint8_t m, uintptr_t) {
    r.init &= uint8_t(~m);
    if ((r.w_mask & ~m) == 0) r.w_serial = 0, r.w_block = 0, r.w_mask = 0;
    if ((r.r_mask & ~m) == 0) r.r_serial = 0, r.r_block = 0, r.r_mask = 0;
  });
}

}  // namespace moe_emu
