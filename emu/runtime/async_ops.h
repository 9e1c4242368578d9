// CUDA emulator (emu/README.md): what Hopper's asynchronous operations share inside the runtime: the
// checks of the shared memory they read and write (checker.cpp, async_block.cpp) and the end of a
// thread's wgmma and TMA store groups (wgmma.cpp, tma.cpp). Covered by tests/emu/async_checker_test.cpp.
#pragma once
#include <string>

#include "state.h"

namespace moe_emu {

/// Shared memory an asynchronous unit reads for thread t (wgmma operands, a TMA store's source): checked
/// as t's read, and every byte a thread wrote must have been fenced (fence.proxy.async) after the write.
void check_async_read(ThreadState& t, uintptr_t addr, size_t bytes, uintptr_t pc, const char* reader);
/// Shared memory a TMA load will write for thread t: checked as t's write now (races, copies in flight),
/// then in flight (a read before it lands is reported) until it lands (checker.cpp).
void note_async_write(ThreadState& t, uintptr_t addr, size_t bytes, uintptr_t pc);
/// Lands bytes `note_async_write` announced: no longer in flight (checker.cpp).
void land_async_write(Worker& w, uintptr_t addr, size_t bytes);
/// The thread ends: a wgmma in flight is reported (wgmma.cpp); its TMA stores complete (tma.cpp).
void finish_wgmma(ThreadState& t);
void finish_bulk(ThreadState& t);
/// A shared-memory write of thread t to arena bytes [off, off + bytes) that one of its asynchronous
/// operations in flight reads (a wgmma or a TMA store it has not waited for) is reported (async_block.cpp).
void check_in_flight_write(ThreadState& t, size_t off, size_t bytes, uintptr_t pc);
/// The program counter of t's wgmma (wgmma.cpp) or TMA store (tma.cpp) in flight that reads those bytes, or 0.
uintptr_t wgmma_reads(const ThreadState& t, size_t off, size_t bytes);
uintptr_t bulk_reads(const ThreadState& t, size_t off, size_t bytes);
/// Why the threads of warpgroup `wg` waiting in `c` cannot go on (wgmma.cpp).
std::string describe_warpgroup_wait(const Worker& w, const WarpgroupCollective& c, int wg);

}  // namespace moe_emu
