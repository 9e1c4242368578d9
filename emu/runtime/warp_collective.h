// CUDA emulator (emu/README.md): the warp collective every warp-wide operation goes through
// (warp.cpp), and the warp-wide tensor-core operations it completes (mma_sync.cpp): the last lane of
// the mask to arrive computes every lane's result. Covered by tests/emu/checker_test.cpp and
// tests/gpu/ptx_instructions_parity_test.cpp.
#pragma once
#include <cstdint>

#include "state.h"

namespace moe_emu {

/// The calling lane takes part in a collective; returns its result (after every lane of `mask` came).
/// `value` is what the lanes must agree on (or the lane's own argument); `mma_in` / `mma_out` the
/// lane's operands and destination, `row` the 16 bytes of shared memory it read (ldmatrix).
uint64_t collective(CollectiveKind kind, unsigned mask, uint64_t value, uintptr_t pc, Shuffle shuffle = Shuffle::index,
                    const void* const* mma_in = nullptr, void* mma_out = nullptr, const uint8_t* row = nullptr);

/// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: c.arg is the MmaType, lane l's operands
/// mma_in[l] = {u32 a[4], u32 b[2], float c[4]} and its destination mma_out[l] = float d[4].
void complete_mma_sync(Collective& c);
/// ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.b16: c.arg = matrices * 2 + trans, rows[l] the row lane l
/// addressed, mma_out[l] = u32 r[matrices].
void complete_ldmatrix(Collective& c);

}  // namespace moe_emu
