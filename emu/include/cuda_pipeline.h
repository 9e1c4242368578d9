// CUDA emulator (emu/README.md): CUDA's pipeline primitives (cp.async). A copy is queued by the
// issuing thread and lands only when __pipeline_wait_prior releases its group, so a missing wait reads
// stale shared memory (and the checker reports the read of bytes whose copy is still in flight).
#pragma once
#include <cstddef>

#include "moe_emu/qualifiers.h"
#include "moe_emu/runtime.h"

MOE_EMU_INLINE void __pipeline_memcpy_async(void* dst_shared, const void* src_global, size_t size_and_align, size_t zfill = 0) {
  moe_emu::pipeline_memcpy_async(dst_shared, src_global, size_and_align, zfill);
}
MOE_EMU_INLINE void __pipeline_commit() { moe_emu::pipeline_commit(); }
MOE_EMU_INLINE void __pipeline_wait_prior(size_t prior) { moe_emu::pipeline_wait_prior(static_cast<unsigned>(prior)); }
