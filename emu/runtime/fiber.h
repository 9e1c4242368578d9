// CUDA emulator (emu/README.md): fibers, the execution contexts of emulated GPU threads. Each
// emulated thread runs on its own stack and gives the CPU back only at a barrier, a warp collective
// or its end; switching saves the callee-saved registers and the FP control words (x86-64, a few
// instructions: fiber.cpp). Covered by every emulated kernel launch.
#pragma once
#include <cstddef>

namespace moe_emu {

struct FiberContext {
  void* sp = nullptr;  // the saved stack pointer
};

/// Prepares `fiber` to run entry(arg) on the stack [stack, stack + bytes) at its first switch.
void fiber_init(FiberContext& fiber, char* stack, size_t bytes, void (*entry)(void*), void* arg);
/// Saves the running context into `from` and continues `to`.
void fiber_switch(FiberContext& from, FiberContext& to);

}  // namespace moe_emu
