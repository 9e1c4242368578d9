// CUDA emulator (emu/README.md): the CUDA function and variable qualifiers as plain C++. Kernels are
// ordinary functions (cu_rewrite gives each body its MOE_EMU_KERNEL_ENTRY); __shared__ never
// reaches the compiler (cu_rewrite turns each declaration into a per-block shared variable).
#pragma once

#define __host__
#define __device__
#define __global__
#define __forceinline__ inline __attribute__((always_inline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __constant__
/// For the emulator's own device-side wrappers: inlined, so a program counter taken in the runtime
/// points into the kernel's code.
#define MOE_EMU_INLINE inline __attribute__((always_inline))
#define __managed__
#define __grid_constant__
