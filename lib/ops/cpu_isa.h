// The instruction set of moe's own CPU kernels (the row loops of attention, ops/attention_cpu.cpp): the
// portable code (SSE2, what the build targets) or hand-vectorised AVX-512F versions, chosen once per process
// at run time: avx512 where the CPU has AVX-512F, unless MOE_CPU_ISA=portable|avx512 says otherwise
// (benchmarks, and tests that compare the two). Such kernels are written as MOE_AVX512 functions between
// MOE_AVX512_BEGIN and MOE_AVX512_END. The GEMM libraries choose for themselves (ops/cpu_gemm.h).
// Covered by tests/ops/attention_test.cpp ("f32 attention: the AVX-512 rows equal the portable ones").
#pragma once
#include <atomic>
#include <cstdlib>

#include "common/named_enum.h"

namespace moe {

MOE_NAMED_ENUM(CpuIsa, portable, avx512)

/// Marks a function compiled for AVX-512F (called only where cpu_isa() is avx512).
#define MOE_AVX512 __attribute__((target("avx512f")))
/// Around AVX-512 code: GCC 12's intrinsics pass _mm*_undefined_*() to their builtins, which
/// -W(maybe-)uninitialized reports at every use once inlined (GCC bug 105593); the values are never read.
#if defined(__GNUC__) && !defined(__clang__)
#define MOE_AVX512_BEGIN                                                                     \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define MOE_AVX512_END _Pragma("GCC diagnostic pop")
#else
#define MOE_AVX512_BEGIN
#define MOE_AVX512_END
#endif

inline bool cpu_has_avx512() { return __builtin_cpu_supports("avx512f"); }

namespace detail {
inline std::atomic<CpuIsa>& cpu_isa_slot() {
  static std::atomic<CpuIsa> isa{[] {
    const char* v = std::getenv("MOE_CPU_ISA");
    const CpuIsa want = v && *v ? parse_enum<CpuIsa>(v, "MOE_CPU_ISA") : CpuIsa::avx512;
    MOE_CHECK(want != CpuIsa::avx512 || cpu_has_avx512() || !(v && *v), "MOE_CPU_ISA=avx512: this CPU has no AVX-512F");
    return want == CpuIsa::avx512 && cpu_has_avx512() ? CpuIsa::avx512 : CpuIsa::portable;
  }()};
  return isa;
}
}  // namespace detail

/// The instruction set in use (above).
inline CpuIsa cpu_isa() { return detail::cpu_isa_slot().load(std::memory_order_relaxed); }
/// Sets it (tests, benchmarks); avx512 on a CPU without AVX-512F is an error.
inline void set_cpu_isa(CpuIsa isa) {
  MOE_CHECK(isa != CpuIsa::avx512 || cpu_has_avx512(), "CPU instruction set avx512: this CPU has no AVX-512F");
  detail::cpu_isa_slot().store(isa);
}

}  // namespace moe
