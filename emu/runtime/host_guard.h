// CUDA emulator (emu/README.md): host accesses of pinned memory that a queued copy has not written yet.
// A cudaMemcpyAsync from the device into pinned host memory returns before the copy runs (queue.h);
// until it runs, the pages of its destination are protected, and a host thread that touches the
// destination (reads the result without synchronising) is caught by a SIGSEGV handler: the access
// is recorded, the page opened (the host reads the stale bytes, as it would on a GPU) and the next
// synchronisation or cudaGetLastError returns an error with a pending-host-access report.
// Covered by tests/emu/stream_test.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace moe_emu {

/// Protects [addr, addr + bytes) of a pinned allocation (page-aligned, emu/runtime/memory.cpp) until
/// release_guard(serial): the copy `what` (queued as `serial`) will write it.
void guard_pending(uintptr_t addr, size_t bytes, uint32_t serial, const std::string& what);
void release_guard(uint32_t serial);
/// Reports of host accesses caught since the last call (each printed and kept); "" if none.
std::string take_guard_hits();

}  // namespace moe_emu
