// CUDA emulator (emu/README.md): Hopper's warpgroup instructions. wgmma.mma_async m64nNk16 (N a multiple
// of 8 up to 256, bf16/f16 in, f32 accumulate; A from shared memory or registers, B from shared memory
// through matrix descriptors, smem_layout.h) is a collective of the 128 threads of a warpgroup: the
// last to arrive reads the operands (checked as shared-memory reads: in bounds, initialised, landed,
// not racing, and written through a proxy fence when a thread wrote them), computes the product in k
// order and keeps it with the operation; each thread's accumulator registers then hold NaN and are
// owned by the operation (a read or write of them is reported) until a wgmma.wait_group that covers
// its group, which delivers the values. Register layouts (PTX 9.7.15.5.1.1, g = lane / 4, t = lane % 4,
// w = warp in the warpgroup): d[r] is D[16w + g + 8 ((r / 2) % 2)][8 (r / 4) + 2t + r % 2]; A in registers
// as mma.m16n8k16's A with rows offset by 16w. Also reported: a wgmma with no wgmma.fence before it in the
// thread, a thread writing shared memory its wgmma reads, or changing its A registers, before its wait
// covers that wgmma (wgmma_reads: the checker asks on every shared write of such a thread), a thread ending
// with a wgmma in flight,
// a warpgroup collective entered by part of the warpgroup (the scheduler's deadlock report), and
// setmaxnreg outside [24, 256] or in the wrong direction; setmaxnreg.inc waits while the block's pool
// (65,536 registers shared by its threads at launch) has no room. Covered by
// tests/gpu/ptx_instructions_parity_test.cpp and tests/emu/async_checker_test.cpp.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "async_ops.h"
#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "moe_emu/runtime.h"
#include "smem_layout.h"
#include "state.h"

namespace moe_emu {

struct WgmmaOp {
  int n = 0;
  std::vector<float> result;                  // [128][n / 2]
  float* d[kWarpgroupThreads] = {};           // each thread's accumulator registers
  const uint32_t* a[kWarpgroupThreads] = {};  // ... and A registers (nullptr: A from shared memory)
  uint32_t a_values[kWarpgroupThreads][4] = {};
  std::vector<size_t> chunks;  // the 16-byte chunks of shared memory it reads (offsets, sorted)
  uintptr_t pc = 0;
};

namespace {
#define MOE_EMU_PC reinterpret_cast<uintptr_t>(__builtin_return_address(0))

struct Operands {
  float* d;
  const uint32_t* a;
};

float element(MmaType type, uint16_t bits) {
  return type == MmaType::bf16 ? bf16_bits_to_float(bits) : half_bits_to_float(bits);
}

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x9e3779b97f4a7c15ull + (h >> 29); }

unsigned launch_regs(const Worker& w) {  // per thread, the block holding the SM's 65,536 registers
  const unsigned threads = (w.nthreads + kWarpgroupThreads - 1) / kWarpgroupThreads * kWarpgroupThreads;
  return std::min(256u, 65536u / threads / 8 * 8);
}

unsigned regs_of(const Worker& w, int wg) { return w.async.regs[wg] ? w.async.regs[wg] : launch_regs(w); }

bool pool_fits(const Worker& w, int wg, unsigned regs) {
  const int groups = int((w.nthreads + kWarpgroupThreads - 1) / kWarpgroupThreads);
  unsigned total = 0;
  for (int g = 0; g < groups; ++g) total += (g == wg ? regs : regs_of(w, g)) * kWarpgroupThreads;
  return total <= launch_regs(w) * unsigned(groups) * kWarpgroupThreads;
}

void release(Worker& w, WarpgroupCollective& c, int wg) {
  for (int i = 0; i < kWarpgroupThreads; ++i) {
    ThreadState& o = w.threads[size_t(wg * kWarpgroupThreads + i)];
    if (o.status == ThreadStatus::at_group && o.async.wait_object == &c) make_ready(w, o);
  }
  c = WarpgroupCollective{};
}

/// Joins the warpgroup's collective; true in the last thread to arrive (which then carries it out),
/// false in the others once that is done.
bool arrive(ThreadState& t, WarpgroupOp op, uint64_t key, const void* in, uintptr_t pc, const char* name) {
  Worker& w = *t.worker;
  const int wg = t.warp / 4;
  if (unsigned(wg + 1) * kWarpgroupThreads > w.nthreads)
    report(t, ReportKind::async_misuse, pc,
           std::string(name) + " in a block of " + std::to_string(w.nthreads) + " threads: warpgroup " +
               std::to_string(wg) + " is not complete (a warpgroup is 4 whole warps)",
           true);
  WarpgroupCollective& c = w.async.warpgroup[wg];
  if (c.arrived == 0)
    c.op = op, c.key = key, c.pc = pc;
  else if (c.op != op || c.key != key)
    report(t, ReportKind::async_misuse, pc,
           std::string("threads of warpgroup ") + std::to_string(wg) + " execute " + name +
               " with other operands than their warpgroup, or while it waits in another warpgroup instruction",
           true, 0, -1, c.pc);
  c.in[t.tid % kWarpgroupThreads] = in;
  if (++c.arrived < unsigned(kWarpgroupThreads)) {
    wait_in_group(t, GroupWait::warpgroup, &c, pc);
    return false;
  }
  return true;
}

/// The value of thread `o`'s accumulator registers `d` that the next wgmma adds to: the newest
/// wgmma in flight that writes them, else the registers.
const float* current_accumulator(const ThreadState& o, const float* d) {
  auto find = [&](const std::vector<WgmmaSlot>& slots) -> const float* {
    for (auto it = slots.rbegin(); it != slots.rend(); ++it)
      if (it->op->d[it->index] == d) return it->op->result.data() + size_t(it->index) * size_t(it->op->n / 2);
    return nullptr;
  };
  if (const float* v = find(o.async.wgmma_open)) return v;
  for (auto g = o.async.wgmma_groups.rbegin(); g != o.async.wgmma_groups.rend(); ++g)
    if (const float* v = find(*g)) return v;
  return d;
}

/// Reads a 16-bit operand (rows x 16) from shared memory through its descriptor into m[row][k].
void read_operand(ThreadState& t, WgmmaOp& op, MmaType type, uint64_t desc, bool mn_major, int rows, float* m,
                  uintptr_t pc) {
  Worker& w = *t.worker;
  const SmemDescriptor d = decode_descriptor(desc);
  if (d.base_offset)
    report(t, ReportKind::async_misuse, pc,
           "wgmma descriptor with a base offset: the emulator needs swizzle "
           "patterns that start on their repeat boundary (base offset 0)",
           true);
  std::vector<size_t> chunks;
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < 16; ++k) {
      const size_t off = element_offset(d, mn_major, r, k);
      if (off + 2 > w.arena_bytes)
        report(t, ReportKind::out_of_bounds, pc,
               "wgmma operand element at shared offset " + std::to_string(off) +
                   " is beyond shared memory (check the descriptor)",
               true);
      chunks.push_back(off & ~size_t(15));
      uint16_t bits;
      std::memcpy(&bits, w.arena + off, 2);
      m[r * 16 + k] = element(type, bits);
    }
  std::sort(chunks.begin(), chunks.end());
  chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
  for (size_t c : chunks) check_async_read(t, reinterpret_cast<uintptr_t>(w.arena) + c, 16, pc, "wgmma.mma_async");
  op.chunks.insert(op.chunks.end(), chunks.begin(), chunks.end());
  std::sort(op.chunks.begin(), op.chunks.end());
}

/// The last thread of the warpgroup carries out the wgmma for all 128.
void perform(ThreadState& t, MmaType type, int n, bool from_regs, uint64_t desc_a, uint64_t desc_b, bool trans_a,
             bool trans_b, bool accumulate, uintptr_t pc) {
  Worker& w = *t.worker;
  const int wg = t.warp / 4;
  WarpgroupCollective& c = w.async.warpgroup[wg];
  auto op = std::make_shared<WgmmaOp>();
  op->n = n, op->pc = pc;
  op->result.assign(size_t(kWarpgroupThreads) * size_t(n / 2), 0.f);
  std::vector<float> A(64 * 16), B(size_t(n) * 16);  // A[m][k], B[n][k]
  for (int i = 0; i < kWarpgroupThreads; ++i) {
    const auto* o = static_cast<const Operands*>(c.in[i]);
    op->d[i] = o->d, op->a[i] = o->a;
    if (!from_regs) continue;
    std::memcpy(op->a_values[i], o->a, sizeof(op->a_values[i]));
    const int lane = i % 32, g = lane / 4, q = lane % 4, row0 = 16 * (i / 32);
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h)
        A[size_t(row0 + g + 8 * (r % 2)) * 16 + size_t(2 * q + 8 * (r / 2) + h)] =
            element(type, uint16_t(op->a_values[i][r] >> (16 * h)));
  }
  if (!from_regs) read_operand(t, *op, type, desc_a, trans_a, 64, A.data(), pc);
  read_operand(t, *op, type, desc_b, trans_b, n, B.data(), pc);
  for (int i = 0; i < kWarpgroupThreads; ++i) {
    ThreadState& o = w.threads[size_t(wg * kWarpgroupThreads + i)];
    const float* acc = current_accumulator(o, op->d[i]);
    float* out = op->result.data() + size_t(i) * size_t(n / 2);
    const int lane = i % 32, g = lane / 4, q = lane % 4;
    for (int r = 0; r < n / 2; ++r) {
      const int row = 16 * (i / 32) + g + 8 * ((r / 2) % 2), col = 8 * (r / 4) + 2 * q + r % 2;
      float sum = accumulate ? acc[r] : 0.f;
      for (int k = 0; k < 16; ++k) sum += A[size_t(row) * 16 + size_t(k)] * B[size_t(col) * 16 + size_t(k)];
      out[r] = sum;
    }
  }
  for (int i = 0; i < kWarpgroupThreads; ++i) {  // the registers now belong to the operation
    ThreadState& o = w.threads[size_t(wg * kWarpgroupThreads + i)];
    o.async.wgmma_open.push_back(WgmmaSlot{op, i});
    const auto begin = reinterpret_cast<uintptr_t>(op->d[i]);
    o.async.poisoned.push_back(Poison{begin, begin + sizeof(float) * size_t(n / 2), pc});
    std::fill(op->d[i], op->d[i] + n / 2, std::numeric_limits<float>::quiet_NaN());
  }
}

/// Thread t's part of a wgmma it waited for: the values, unless a newer wgmma in flight writes the same registers.
void deliver(ThreadState& t, const WgmmaSlot& s) {
  WgmmaOp& op = *s.op;
  if (op.a[s.index] && std::memcmp(op.a[s.index], op.a_values[s.index], sizeof(op.a_values[0])) != 0)
    report(t, ReportKind::async_misuse, op.pc,
           "the A registers of a wgmma.mma_async were changed before the wgmma.wait_group that covers it", false);
  float* d = op.d[s.index];
  const auto begin = reinterpret_cast<uintptr_t>(d);
  auto newer = [&](const std::vector<WgmmaSlot>& v) {
    return std::any_of(v.begin(), v.end(), [&](const WgmmaSlot& o) { return o.op->d[o.index] == d; });
  };
  if (newer(t.async.wgmma_open) || std::any_of(t.async.wgmma_groups.begin(), t.async.wgmma_groups.end(), newer)) return;
  std::memcpy(d, op.result.data() + size_t(s.index) * size_t(op.n / 2), sizeof(float) * size_t(op.n / 2));
  auto& p = t.async.poisoned;
  p.erase(std::remove_if(p.begin(), p.end(), [&](const Poison& q) { return q.begin == begin; }), p.end());
}
}  // namespace

void wgmma_fence() { current_thread().async.wgmma_fenced = true; }

void wgmma_commit_group() {
  ThreadState& t = current_thread();
  t.async.wgmma_groups.push_back(std::move(t.async.wgmma_open));
  t.async.wgmma_open.clear();
}

void wgmma_wait_group(unsigned pending) {
  ThreadState& t = current_thread();
  while (t.async.wgmma_groups.size() > pending) {
    std::vector<WgmmaSlot> group = std::move(t.async.wgmma_groups.front());
    t.async.wgmma_groups.erase(t.async.wgmma_groups.begin());
    for (const WgmmaSlot& s : group) deliver(t, s);
  }
}

void wgmma_mma_async(MmaType type, int n, float* d, const uint32_t* a_regs, uint64_t desc_a, uint64_t desc_b,
                     bool trans_a, bool trans_b, bool accumulate) {
  const uintptr_t pc = MOE_EMU_PC;
  ThreadState& t = current_thread();
  if (n < 8 || n > 256 || n % 8)
    report(t, ReportKind::async_misuse, pc,
           "wgmma.mma_async m64n" + std::to_string(n) +
               "k16: N is a multiple of 8 "
               "from 8 to 256",
           true);
  if (!t.async.wgmma_fenced)
    report(t, ReportKind::async_misuse, pc,
           "wgmma.mma_async with no wgmma.fence before it in this thread (the "
           "warpgroup's registers and shared memory are not fenced for it)",
           false);
  flush_pending_writes(t);
  uint64_t key = mix(mix(mix(uint64_t(type), uint64_t(n)), a_regs ? 0 : desc_a), desc_b);
  key = mix(key,
            uint64_t(trans_a) | uint64_t(trans_b) << 1 | uint64_t(accumulate) << 2 | uint64_t(a_regs != nullptr) << 3);
  const Operands mine{d, a_regs};
  if (!arrive(t, WarpgroupOp::wgmma, key, &mine, pc, "wgmma.mma_async")) return;
  perform(t, type, n, a_regs != nullptr, desc_a, desc_b, trans_a, trans_b, accumulate, pc);
  release(*t.worker, t.worker->async.warpgroup[t.warp / 4], t.warp / 4);
}

void setmaxnreg(unsigned regs, bool increase) {
  const uintptr_t pc = MOE_EMU_PC;
  ThreadState& t = current_thread();
  Worker& w = *t.worker;
  const char* name = increase ? "setmaxnreg.inc" : "setmaxnreg.dec";
  if (regs < 24 || regs > 256 || regs % 8)
    report(t, ReportKind::async_misuse, pc,
           std::string(name) + " to " + std::to_string(regs) + " registers: a multiple of 8 from 24 to 256", true);
  const int wg = t.warp / 4;
  if (!arrive(t, WarpgroupOp::setmaxnreg, regs | uint64_t(increase) << 16, nullptr, pc, name)) return;
  const unsigned held = regs_of(w, wg);
  if (increase ? regs < held : regs > held)
    report(t, ReportKind::async_misuse, pc,
           std::string(name) + " to " + std::to_string(regs) + " registers while the warpgroup holds " +
               std::to_string(held),
           true);
  if (increase && !pool_fits(w, wg, regs)) {  // wait, with the warpgroup, for another one to release some
    w.async.warpgroup[wg].blocked = true;
    wait_in_group(t, GroupWait::warpgroup, &w.async.warpgroup[wg], pc);
    return;
  }
  w.async.regs[wg] = regs;
  release(w, w.async.warpgroup[wg], wg);
  for (int g = 0; g < kBlockWarpgroups; ++g) {  // a decrease may make room for a waiting increase
    WarpgroupCollective& c = w.async.warpgroup[g];
    if (c.blocked && pool_fits(w, g, unsigned(c.key & 0xffff))) {
      w.async.regs[g] = unsigned(c.key & 0xffff);
      release(w, c, g);
    }
  }
}

void check_poisoned(ThreadState& t, uintptr_t addr, size_t bytes, bool write, uintptr_t pc) {
  for (const Poison& p : t.async.poisoned)
    if (addr < p.end && addr + bytes > p.begin) {
      report(t, ReportKind::async_misuse, pc,
             std::string(write ? "write" : "read") +
                 " of an accumulator register of a wgmma.mma_async in flight "
                 "(issued at " +
                 source_line(p.pc) + ") before the wgmma.wait_group that covers it",
             false);
      return;
    }
}

std::string describe_warpgroup_wait(const Worker& w, const WarpgroupCollective& c, int wg) {
  if (c.blocked)
    return "setmaxnreg.inc to " + std::to_string(c.key & 0xffff) + " registers per thread waits for registers the " +
           "block's pool (" + std::to_string(launch_regs(w)) + " per thread at launch) never frees";
  return std::string(c.op == WarpgroupOp::wgmma ? "wgmma.mma_async" : "setmaxnreg") + " entered by " +
         std::to_string(c.arrived) + " of the 128 threads of warpgroup " + std::to_string(wg) +
         " (every thread of a warpgroup must execute it)";
}

uintptr_t wgmma_reads(const ThreadState& t, size_t off, size_t bytes) {
  auto covers = [&](const WgmmaSlot& s) {
    const auto& c = s.op->chunks;
    auto it = std::upper_bound(c.begin(), c.end(), off + bytes - 1);  // the first chunk past the write
    return it != c.begin() && *std::prev(it) + 16 > off;
  };
  for (const WgmmaSlot& s : t.async.wgmma_open)
    if (covers(s)) return s.op->pc;
  for (const auto& g : t.async.wgmma_groups)
    for (const WgmmaSlot& s : g)
      if (covers(s)) return s.op->pc;
  return 0;
}

void finish_wgmma(ThreadState& t) {
  const WgmmaOp* first = nullptr;  // the oldest in flight
  for (const auto& g : t.async.wgmma_groups)
    if (!first && !g.empty()) first = g.front().op.get();
  if (!first && !t.async.wgmma_open.empty()) first = t.async.wgmma_open.front().op.get();
  if (first)
    report(t, ReportKind::async_misuse, first->pc,
           "the thread ended with this wgmma.mma_async in flight: no wgmma.wait_group waited for it", false);
  t.async.wgmma_open.clear();
  t.async.wgmma_groups.clear();
  t.async.poisoned.clear();
}

}  // namespace moe_emu
