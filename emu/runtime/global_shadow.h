// CUDA emulator (emu/README.md): the shadow state of device memory, per 8 bytes (allocated when first
// touched): which bytes were written since their allocation (a cudaMalloc block, or a tensor of the
// caching allocator), and which operation and, within a kernel, which block last wrote and read them.
// From it the checker reports three things a GPU shows only as wrong numbers:
//   uninitialized-read  a kernel or library call reads bytes never written since allocation;
//   race                two blocks of one launch touch a byte and one of them writes it (atomics
//                       excepted: they may meet);
//   stream-race         an operation touches bytes that another stream's operation wrote (or read,
//                       for a write) with no event or synchronisation ordering the two (queue.h's clocks).
// Covered by tests/emu/blind_spot_test.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace moe_emu {

struct ThreadState;
struct Op;

/// A kernel thread's access of global device memory (bounds already checked).
void shadow_kernel_access(ThreadState& t, uintptr_t addr, size_t bytes, bool write, bool atomic, uintptr_t pc);

/// What a copy, memset or library call `op` does to device memory. Each returns "" or the text of the
/// first problem found (a stream race; with check_init, bytes never written), and records the access.
std::string shadow_op_read(uintptr_t addr, size_t bytes, const Op& op, bool check_init);
std::string shadow_op_write(uintptr_t addr, size_t bytes, const Op& op);
/// A device-to-device copy: dst's bytes are written as far as src's were.
std::string shadow_op_copy(uintptr_t dst, uintptr_t src, size_t bytes, const Op& op);
/// Fresh memory (a new allocation or tensor): nothing written, no access recorded.
void shadow_forget(uintptr_t addr, size_t bytes);

}  // namespace moe_emu
