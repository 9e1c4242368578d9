// Fiber switching for the CUDA emulator (fiber.h). x86-64: moe_emu_switch pushes rbp, rbx, r12-r15
// and the MXCSR / x87 control words, stores rsp, loads the other rsp and pops the same; a new fiber's
// stack is laid out as if it had switched away at moe_emu_fiber_start, which calls entry(arg) on an
// aligned stack. Only x86-64 is implemented (the only target CI and the developers use).
#include "fiber.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
extern "C" void moe_emu_switch(void** save_sp, void* load_sp);
extern "C" void moe_emu_fiber_start();
asm(R"(
  .text
  .globl moe_emu_switch
  .type moe_emu_switch, @function
moe_emu_switch:
  .cfi_startproc
  endbr64
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size moe_emu_switch, .-moe_emu_switch

  .globl moe_emu_fiber_start
  .type moe_emu_fiber_start, @function
moe_emu_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  endbr64
  movq %r13, %rdi
  andq $-16, %rsp
  callq *%r12
  ud2
  .cfi_endproc
  .size moe_emu_fiber_start, .-moe_emu_fiber_start
)");

namespace moe_emu {

void fiber_init(FiberContext& fiber, char* stack, size_t bytes, void (*entry)(void*), void* arg) {
  auto* top = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t(15)));
  uint64_t* sp = top - 8;  // 8 slots: control words, r15, r14, r13, r12, rbx, rbp, return address
  uint32_t mxcsr;
  uint16_t fpucw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  uint64_t words = 0;
  std::memcpy(&words, &mxcsr, 4);
  std::memcpy(reinterpret_cast<char*>(&words) + 4, &fpucw, 2);
  sp[0] = words;
  sp[1] = 0;                                    // r15
  sp[2] = 0;                                    // r14
  sp[3] = reinterpret_cast<uint64_t>(arg);      // r13: entry's argument
  sp[4] = reinterpret_cast<uint64_t>(entry);    // r12: entry
  sp[5] = 0;                                    // rbx
  sp[6] = 0;                                    // rbp
  sp[7] = reinterpret_cast<uint64_t>(&moe_emu_fiber_start);
  fiber.sp = sp;
}

void fiber_switch(FiberContext& from, FiberContext& to) { moe_emu_switch(&from.sp, to.sp); }

}  // namespace moe_emu

#else
#error "the CUDA emulator's fibers are implemented for x86-64 (see emu/README.md)"
#endif
