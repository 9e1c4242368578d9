// The instruction set of moe's own CPU kernels (the row loops of attention, ops/attention_cpu.cpp; the int8
// quantizer and product; the rows of softmax, cross-entropy and beam top-k through run_wide): the portable code
// (SSE2, what the build targets), AVX2 (+ FMA) or AVX-512F versions, chosen once per process at run time: the
// widest the CPU has, unless MOE_CPU_ISA=portable|avx2|avx512 says otherwise (benchmarks, and tests that compare
// them). Such kernels are written as MOE_AVX512 or MOE_AVX2 functions between MOE_AVX512_BEGIN and
// MOE_AVX512_END; a kernel without a version for the chosen set runs the next narrower one it has. The GEMM
// libraries choose for themselves (ops/cpu_gemm.h).
// Covered by tests/ops/attention_test.cpp ("f32 attention: every instruction set's rows ..."), softmax_test.cpp,
// cross_entropy_test.cpp and cpu_gemm_test.cpp (each set against the portable code).
#pragma once
#include <atomic>
#include <cstdlib>

#include "common/named_enum.h"

namespace moe {

MOE_NAMED_ENUM(CpuIsa, portable, avx2, avx512)

/// Marks a function compiled for AVX-512F (called only where cpu_isa() is avx512).
#define MOE_AVX512 __attribute__((target("avx512f")))
/// Marks a function compiled for AVX2 with FMA (called only where cpu_isa() is avx2 or wider).
#define MOE_AVX2 __attribute__((target("avx2,fma")))
/// Marks a function compiled for AVX2 without FMA: its float arithmetic rounds as the portable code's (no
/// multiply-add is contracted), so its results equal the portable build's.
#define MOE_AVX2_EXACT __attribute__((target("avx2")))
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
inline bool cpu_has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
/// Whether this CPU can run `isa`'s kernels.
inline bool cpu_supports(CpuIsa isa) {
  return isa == CpuIsa::portable || (isa == CpuIsa::avx2 && cpu_has_avx2()) ||
         (isa == CpuIsa::avx512 && cpu_has_avx512());
}
/// The widest set this CPU has.
inline CpuIsa widest_cpu_isa() {
  return cpu_has_avx512() ? CpuIsa::avx512 : cpu_has_avx2() ? CpuIsa::avx2 : CpuIsa::portable;
}

namespace detail {
inline std::atomic<CpuIsa>& cpu_isa_slot() {
  static std::atomic<CpuIsa> isa{[] {
    const char* v = std::getenv("MOE_CPU_ISA");
    if (!(v && *v)) return widest_cpu_isa();
    const CpuIsa want = parse_enum<CpuIsa>(v, "MOE_CPU_ISA");
    MOE_CHECK(cpu_supports(want), "MOE_CPU_ISA=", v, ": this CPU does not have it (it has ",
              enum_name(widest_cpu_isa()), ")");
    return want;
  }()};
  return isa;
}
}  // namespace detail

/// The instruction set in use (above).
inline CpuIsa cpu_isa() { return detail::cpu_isa_slot().load(std::memory_order_relaxed); }
/// f() with f and everything it calls inlined into a function compiled for AVX2 without FMA, where the set in use is
/// not portable: plain loops (row passes written in lanes) vectorise 8 floats wide with the same operations in the
/// same order, so the results equal the portable build's bit for bit. Call it per block of rows, inside
/// parallel_for, not around it.
template <class F>
__attribute__((target("avx2"), flatten)) void run_avx2_wide(const F& f) {
  f();
}
template <class F>
void run_wide(const F& f) {
  if (cpu_isa() == CpuIsa::portable)
    f();
  else
    run_avx2_wide(f);
}

/// Sets it (tests, benchmarks); a set the CPU does not have is an error.
inline void set_cpu_isa(CpuIsa isa) {
  MOE_CHECK(cpu_supports(isa), "CPU instruction set ", enum_name(isa), ": this CPU does not have it");
  detail::cpu_isa_slot().store(isa);
}

}  // namespace moe
