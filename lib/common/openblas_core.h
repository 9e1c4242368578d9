// Which kernels OpenBLAS runs. Debian's OpenBLAS is built for every x86-64 (DYNAMIC_ARCH) and picks a kernel set
// for the CPU when it is loaded; version 0.3.21 does not know recent Intel Xeons (avx512_fp16) and falls back to
// its SSE3 "Prescott" kernels there: PyTorch trained the demo model at 336 tokens/s on such a Xeon against 1,566 on
// an AVX2 EPYC (issue 39). moe's f32 GEMMs go to oneDNN on AVX-512, but its f64 GEMMs, the reference GEMMs of the
// tests and MOE_CPU_GEMM=openblas still run OpenBLAS. OPENBLAS_CORETYPE, read when the library loads, names the
// set to use instead; every moe program sets it and runs itself again when OpenBLAS chose a set without AVX2 on a
// CPU that has it (common/cpu_threads.h: rerun_with_runtime_env), unless the user set it.
// Covered by tests/unit/openblas_core_test.cpp.
#pragma once
#include <string>
#include <string_view>

namespace moe {

/// The kernel set OpenBLAS chose (openblas_get_corename(): "Zen", "Haswell", "SkylakeX", "Prescott", ...).
std::string openblas_core();

/// The OPENBLAS_CORETYPE for a CPU whose OpenBLAS chose `core`: "SkylakeX" where the CPU has AVX-512 (F, BW, DQ,
/// VL) and "Haswell" where it has AVX2 and FMA, when `core` is not one of OpenBLAS's sets with AVX2; else "".
std::string openblas_core_override(std::string_view core, bool avx512, bool avx2);

/// The same for this CPU and this process's OpenBLAS.
std::string openblas_core_override();

}  // namespace moe
