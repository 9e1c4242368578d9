// CUDA emulator (emu/README.md): the state of Hopper's block-level synchronisation and asynchronous
// operations (docs/CUDA-EMULATOR.md, "Tensor-core and asynchronous instructions"). Per thread: the
// wgmma groups and TMA store groups it has in flight, the registers those own (poisoned: a read or
// write of them before the wait is reported), what it waits for, its last proxy fence. Per block:
// the 16 named barriers, the mbarriers of its shared memory (each with its phase, pending arrivals,
// transaction count and the TMA loads that will complete it), the warpgroup collectives in progress,
// the register pool of setmaxnreg, and the happens-before knowledge between warps that named barriers
// and mbarriers create (knows[X][Y]: the accesses of warp Y with a sync stamp below it are ordered
// before warp X's next ones), which the race checker reads. Covered by tests/emu/async_checker_test.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace moe_emu {

constexpr int kWarpgroupThreads = 128, kBlockWarps = 32, kBlockWarpgroups = kBlockWarps / 4, kNamedBarriers = 16;

/// Registers an asynchronous operation owns until its wait (wgmma accumulators): touching them is reported.
struct Poison {
  uintptr_t begin, end, pc;
};

struct WgmmaOp;    // wgmma.cpp
struct BulkStore;  // tma.cpp

/// A thread's place in a wgmma in flight: the operation (shared by the warpgroup) and its index there.
struct WgmmaSlot {
  std::shared_ptr<WgmmaOp> op;
  int index = 0;
};

enum class GroupWait { none, named_barrier, mbarrier, warpgroup };

struct AsyncThreadState {
  GroupWait wait = GroupWait::none;   // an at_group thread: what it waits in
  const void* wait_object = nullptr;  // ... the NamedBarrier, MBarrier or WarpgroupCollective
  unsigned wait_parity = 0;           // ... the phase parity it waits for (mbarrier)
  std::vector<Poison> poisoned;
  std::vector<std::vector<WgmmaSlot>> wgmma_groups;                  // committed, oldest first
  std::vector<WgmmaSlot> wgmma_open;                                 // issued, not committed
  bool wgmma_fenced = false;                                         // a wgmma.fence since the thread started
  std::vector<std::vector<std::shared_ptr<BulkStore>>> bulk_groups;  // TMA stores, committed
  std::vector<std::shared_ptr<BulkStore>> bulk_open;
  uint32_t proxy_fence = 0;  // sync stamp of its last fence.proxy.async (its earlier writes are visible to wgmma)

  /// Whether a wgmma or TMA store of the thread that reads shared memory is in flight.
  bool reads_in_flight() const {
    return !wgmma_open.empty() || !wgmma_groups.empty() || !bulk_open.empty() || !bulk_groups.empty();
  }
};

/// A tensor map as the emulator's cuTensorMapEncodeTiled writes it into the 128-byte CUtensorMap.
struct TensorMapData {
  uint32_t magic;
  uint8_t rank, element_bytes, swizzle_bytes, nan_fill;  // swizzle_bytes: 0, 32, 64 or 128
  uint8_t element_stride[5];
  uint8_t dtype;
  uint16_t box[5];
  uint64_t address;
  uint64_t dim[5];
  uint64_t stride[5];  // bytes; stride[0] = element_bytes
};
constexpr uint32_t kTensorMapMagic = 0x4d4f4554;  // "TEOM"

struct TmaLoad {
  uintptr_t dst = 0, pc = 0;
  TensorMapData map{};
  int32_t coords[5] = {};
  int tid = 0;         // the issuing thread
  uint32_t bytes = 0;  // the box, out-of-bounds fill included (the transaction bytes it completes)
  uint32_t stamp = 0;  // above the issuer's sync stamp at issue: its waiters are ordered after the copy
};

struct MBarrier {
  size_t offset = 0;  // in the block's shared memory
  unsigned count = 0;
  int pending = 0;  // arrivals the current phase still needs
  int64_t tx = 0;   // transaction bytes the current phase still expects (negative: delivered beyond)
  uint32_t phase = 0;
  int waiters = 0;
  std::vector<TmaLoad> loads;  // issued and not landed: they land when a thread waits on the barrier
  uint32_t acc[kBlockWarps] = {}, done[kBlockWarps] = {};  // clocks of the arrivals: this phase's, the last completed
  int init_tid = 0;
  uint32_t init_epoch = 0, init_seq = 0;
  uintptr_t init_pc = 0;
  bool overflow_reported = false;
};

struct NamedBarrier {
  unsigned expected = 0, arrived = 0;
  uint32_t acc[kBlockWarps] = {};
  uint32_t lanes[kBlockWarps] = {};  // the lanes of each warp that arrived
  uintptr_t pc = 0;
};

enum class WarpgroupOp { none, wgmma, setmaxnreg };

/// A warpgroup collective: its last thread to arrive carries it out for all 128.
struct WarpgroupCollective {
  WarpgroupOp op = WarpgroupOp::none;
  unsigned arrived = 0;
  bool blocked = false;  // setmaxnreg.inc: every thread came, the register pool has not room yet
  uintptr_t pc = 0;
  uint64_t key = 0;  // what every thread must agree on (shape, descriptors, register count)
  void* out[kWarpgroupThreads] = {};
  const void* in[kWarpgroupThreads] = {};
};

struct AsyncBlockState {
  uint32_t knows[kBlockWarps][kBlockWarps] = {};
  NamedBarrier named[kNamedBarriers];
  std::vector<std::unique_ptr<MBarrier>> mbarriers;
  WarpgroupCollective warpgroup[kBlockWarpgroups];
  unsigned regs[kBlockWarpgroups] = {};  // setmaxnreg: registers per thread of each warpgroup (0: as launched)
  /// Read stamps per shared byte and warp ([arena byte][warp]), mapped when a block first uses a named
  /// barrier or an mbarrier: with them a write is checked against each warp's last read, not only the last one.
  uint32_t* read_stamps = nullptr;
};

}  // namespace moe_emu
