// CUDA emulator (emu/README.md): the mbarriers of the running block (mbarrier.cpp) as the TMA loads
// (tma.cpp) and the deadlock report (async_block.cpp) use them. Covered by tests/emu/async_checker_test.cpp.
#pragma once
#include <string>

#include "state.h"

namespace moe_emu {

/// The mbarrier initialised at `offset` of the block's shared memory, or nullptr.
MBarrier* find_mbarrier(Worker& w, size_t offset);
/// The initialised mbarrier at `bar`, its use by t checked (address, init, init ordered before); `op` names
/// the instruction in reports.
MBarrier& use_mbarrier(ThreadState& t, const void* bar, uintptr_t pc, const char* op);
/// A TMA load completes on `m`: landed at once while a thread waits on m, else when one does.
void attach_load(Worker& w, MBarrier& m, TmaLoad load);
/// Lands every TMA load attached to m (their bytes count against the phase) and completes the phase if it can.
void land_loads(Worker& w, MBarrier& m);
/// Writes a TMA load's box into shared memory (tma.cpp).
void land_tma_load(Worker& w, const TmaLoad& load);
/// Why a thread waiting for the phase of `parity` of m cannot go on.
std::string describe_mbarrier_wait(const Worker& w, const MBarrier& m, unsigned parity);

}  // namespace moe_emu
