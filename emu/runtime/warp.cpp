// CUDA emulator: warp collectives (emu/README.md). A lane entering __syncwarp, a shuffle, ballot,
// match or a wmma operation joins the warp's open collective of the same mask; the last lane to
// arrive computes every lane's result and wakes the others. Checked as CUDA requires: the calling lane
// is in the mask, every named lane exists and takes part in the same operation with the same mask
// (else a report; lanes that exit or wait elsewhere leave the block deadlocked, which the scheduler
// reports), shuffle widths are powers of two, a shuffle reads only lanes in the mask, wmma pointers are
// 256-bit aligned with 16-byte leading dimensions. For the race checker only a completed __syncwarp
// orders the memory accesses of its lanes: CUDA promises no memory ordering for shuffles, votes, match or
// wmma, so warp-synchronous code (a shuffle reduction, then lane 0 overwrites what the lanes read) needs a
// __syncwarp, as compute-sanitizer's racecheck also reports on a GPU.
// Covered by tests/emu/checker_test.cpp and the parity suite.
#include <algorithm>
#include <cstring>

#include "state.h"
#include "warp_collective.h"

namespace moe_emu {
namespace {

uintptr_t caller_pc(void* ra) { return reinterpret_cast<uintptr_t>(ra); }
const char* kind_text(CollectiveKind k);

/// Computes the results of a complete collective into each lane's ThreadState::result.
void complete(Worker& w, ThreadState& t, Collective& c, uintptr_t pc) {
  const int base = t.warp * kWarpSize;
  auto lane = [&](int l) -> ThreadState& { return w.threads[size_t(base + l)]; };
  if (c.kind == CollectiveKind::syncwarp) {  // the lanes' earlier accesses are ordered before their later ones
    const uint32_t id = ++w.sync_counter;
    WarpState& ws = w.warps[size_t(t.warp)];
    if (c.mask == 0xffffffffu) ws.last_full_sync = id;
    else
      for (int a = 0; a < kWarpSize; ++a)
        for (int b = 0; b < kWarpSize; ++b)
          if ((c.mask >> a & 1u) && (c.mask >> b & 1u)) ws.pair_sync[a][b] = id;
  }
  switch (c.kind) {
    case CollectiveKind::syncwarp:
      break;
    case CollectiveKind::shuffle:
      for (int l = 0; l < kWarpSize; ++l) {
        if (!(c.mask >> l & 1u)) continue;
        const int width = int(c.values[l] >> 48), arg = int(int16_t(c.values[l] >> 32)), segment = l & ~(width - 1);
        int src = l;
        if (c.shuffle == Shuffle::index) src = segment + (arg & (width - 1));
        else if (c.shuffle == Shuffle::up) src = l - arg >= segment ? l - arg : l;
        else if (c.shuffle == Shuffle::down) src = l + arg < segment + width ? l + arg : l;
        else src = ((l ^ arg) & ~(width - 1)) == segment ? l ^ arg : l;
        if (!(c.mask >> src & 1u)) {
          report(lane(l), ReportKind::warp_misuse, pc,
                 "lane " + std::to_string(l) + " shuffles from lane " + std::to_string(src) +
                     ", which is not in the mask: the value is undefined",
                 false);
          src = l;
        }
        lane(l).result = lane(src).shuffle_value;
      }
      break;
    case CollectiveKind::ballot: {
      uint64_t bits = 0;
      for (int l = 0; l < kWarpSize; ++l)
        if ((c.mask >> l & 1u) && c.values[l]) bits |= 1ull << l;
      for (int l = 0; l < kWarpSize; ++l)
        if (c.mask >> l & 1u) lane(l).result = bits;
      break;
    }
    case CollectiveKind::match_any:
      for (int l = 0; l < kWarpSize; ++l) {
        if (!(c.mask >> l & 1u)) continue;
        uint64_t bits = 0;
        for (int m = 0; m < kWarpSize; ++m)
          if ((c.mask >> m & 1u) && c.values[m] == c.values[l]) bits |= 1ull << m;
        lane(l).result = bits;
      }
      break;
    case CollectiveKind::wmma_mma: {
      float A[16][16], B[16][16];
      auto in = [&](int l, int which) { return static_cast<const float*>(c.mma_in[l][which]); };
      for (int l = 0; l < kWarpSize; ++l)
        for (int e = 0; e < 8; ++e) {
          const int i = l * 8 + e;
          A[i / 16][i % 16] = in(l, 0)[e];
          B[i / 16][i % 16] = in(l, 1)[e];
        }
      for (int l = 0; l < kWarpSize; ++l)
        for (int e = 0; e < 8; ++e) {
          const int i = l * 8 + e, r = i / 16, col = i % 16;
          float acc = in(l, 2)[e];
          for (int k = 0; k < 16; ++k) acc += A[r][k] * B[k][col];  // 16-bit products are exact in f32: as fmaf
          static_cast<float*>(c.mma_out[l])[e] = acc;
        }
      break;
    }
    case CollectiveKind::mma_sync:
    case CollectiveKind::ldmatrix:
    case CollectiveKind::elect:
      for (int l = 0; l < kWarpSize; ++l)
        if ((c.mask >> l & 1u) && c.values[l] != c.values[t.lane]) {
          report(lane(l), ReportKind::warp_misuse, pc,
                 std::string("the lanes of the warp execute ") + kind_text(c.kind) +
                     " with different operands "
                     "(shape, type or .trans)",
                 true);
          return;
        }
      if (c.kind == CollectiveKind::mma_sync)
        complete_mma_sync(c);
      else if (c.kind == CollectiveKind::ldmatrix)
        complete_ldmatrix(c);
      else
        for (int l = 0; l < kWarpSize; ++l)  // elect.sync: the lowest lane of the mask leads
          if (c.mask >> l & 1u) lane(l).result = (c.mask & ((1u << l) - 1)) == 0;
      break;
    default: {  // wmma loads and stores: the same pointer in every lane
      for (int l = 0; l < kWarpSize; ++l)
        if (c.values[l] != c.values[t.lane]) {
          report(lane(l), ReportKind::wmma_misuse, pc,
                 "the lanes of the warp pass different pointers to one wmma load/store", true);
          return;
        }
      break;
    }
  }
}

const char* kind_text(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::syncwarp: return "__syncwarp";
    case CollectiveKind::shuffle: return "a shuffle";
    case CollectiveKind::ballot: return "a ballot";
    case CollectiveKind::match_any: return "__match_any_sync";
    case CollectiveKind::wmma_mma: return "wmma::mma_sync";
    case CollectiveKind::mma_sync:
      return "mma.sync";
    case CollectiveKind::ldmatrix:
      return "ldmatrix";
    case CollectiveKind::elect:
      return "elect.sync";
    default: return "a wmma load/store";
  }
}

}  // namespace

uint64_t collective(CollectiveKind kind, unsigned mask, uint64_t value, uintptr_t pc, Shuffle shuffle,
                    const void* const* mma_in, void* mma_out, const uint8_t* row) {
  ThreadState& t = current_thread();
  Worker& w = *t.worker;
  flush_pending_writes(t);
  const unsigned me = 1u << t.lane;
  const unsigned existing = w.nthreads - unsigned(t.warp) * 32 >= 32 ? 0xffffffffu
                                                                    : (1u << (w.nthreads - unsigned(t.warp) * 32)) - 1;
  if (!(mask & me))
    report(t, ReportKind::warp_misuse, pc,
           std::string(kind_text(kind)) + " with a mask that does not name the calling lane " + std::to_string(t.lane),
           true);
  if (mask & ~existing)
    report(t, ReportKind::warp_misuse, pc,
           std::string(kind_text(kind)) + " names lanes beyond the end of the block (mask 0x" +
               [&] { char b[16]; std::snprintf(b, sizeof(b), "%08x", mask); return std::string(b); }() + ")",
           true);
  WarpState& ws = w.warps[size_t(t.warp)];
  // Lanes may wait in several collectives at once when their masks differ (a partial-mask match inside
  // a loop whose next iteration starts with a full-mask ballot); a lane joins the open one of its mask.
  auto it = std::find_if(ws.open.begin(), ws.open.end(), [&](const Collective& c) { return c.mask == mask; });
  if (it != ws.open.end() && it->kind != kind)
    report(t, ReportKind::warp_misuse, pc,
           std::string("lane ") + std::to_string(t.lane) + " enters " + kind_text(kind) +
               " while lanes of the same mask wait in " + kind_text(it->kind),
           true);
  if (it == ws.open.end()) {
    ws.open.push_back(Collective{});
    it = ws.open.end() - 1;
    it->kind = kind, it->mask = mask, it->shuffle = shuffle;
  }
  it->arrived |= me;
  it->values[t.lane] = value;
  if (mma_in) std::copy(mma_in, mma_in + 3, it->mma_in[t.lane]);
  if (mma_out) it->mma_out[t.lane] = mma_out;
  if (row) std::memcpy(it->rows[t.lane], row, 16);
  if (it->arrived != mask) {
    t.status = ThreadStatus::at_warp;
    t.wait_pc = pc;
    yield_to_scheduler(t);
    return t.result;
  }
  Collective done = std::move(*it);
  ws.open.erase(it);
  complete(w, t, done, pc);
  for (int l = 0; l < kWarpSize; ++l)
    if ((mask >> l & 1u) && l != t.lane) make_ready(w, w.threads[size_t(t.warp * kWarpSize + l)]);
  return t.result;
}

void syncwarp(unsigned mask) {
  collective(CollectiveKind::syncwarp, mask, 0, caller_pc(__builtin_return_address(0)));
}

uint64_t shuffle(Shuffle kind, unsigned mask, uint64_t bits, int arg, int width) {
  const uintptr_t pc = caller_pc(__builtin_return_address(0));
  if (width < 1 || width > 32 || (width & (width - 1)))
    report(current_thread(), ReportKind::warp_misuse, pc,
           "shuffle width " + std::to_string(width) + " is not a power of two in [1, 32]", true);
  // The value travels in shuffle_value; the lane's own width and argument in the collective's value slot.
  ThreadState& t = current_thread();
  t.shuffle_value = bits;
  const uint64_t packed = (uint64_t(uint32_t(width)) << 48) | (uint64_t(uint16_t(int16_t(arg))) << 32);
  return collective(CollectiveKind::shuffle, mask, packed, pc, kind);
}

unsigned ballot(unsigned mask, bool predicate) {
  return unsigned(collective(CollectiveKind::ballot, mask, predicate, caller_pc(__builtin_return_address(0))));
}

unsigned match_any(unsigned mask, uint64_t value) {
  return unsigned(collective(CollectiveKind::match_any, mask, value, caller_pc(__builtin_return_address(0))));
}

void wmma_converge(WmmaOp op, const void* ptr, unsigned ldm, unsigned element_bytes) {
  const uintptr_t pc = caller_pc(__builtin_return_address(0));
  ThreadState& t = current_thread();
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  if (p % 32)
    report(t, ReportKind::wmma_misuse, pc, "wmma load/store pointer is not 256-bit aligned (address % 32 = " +
                                               std::to_string(p % 32) + ")", true);
  if (ldm * element_bytes % 16)
    report(t, ReportKind::wmma_misuse, pc, "wmma leading dimension " + std::to_string(ldm) +
                                               " is not a multiple of 16 bytes", true);
  const CollectiveKind kind = op == WmmaOp::load_a   ? CollectiveKind::wmma_load_a
                              : op == WmmaOp::load_b ? CollectiveKind::wmma_load_b
                              : op == WmmaOp::load_c ? CollectiveKind::wmma_load_c
                                                     : CollectiveKind::wmma_store;
  collective(kind, 0xffffffffu, p, pc);
}

void wmma_mma(float (&d)[8], const float (&a)[8], const float (&b)[8], const float (&c)[8]) {
  const void* in[3] = {a, b, c};
  collective(CollectiveKind::wmma_mma, 0xffffffffu, 0, caller_pc(__builtin_return_address(0)), Shuffle::index, in, d);
}

}  // namespace moe_emu
