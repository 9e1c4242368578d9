// The CPU GEMM backends behind every dense and grouped GEMM of lib/ops (matmul.cpp, grouped_gemm.cpp,
// int8_gemm.cpp): c = alpha op(a) op(b) + beta c (row-major) by OpenBLAS or oneDNN, chosen once per
// process. oneDNN's JIT sgemm uses AVX-512 where Debian's OpenBLAS 0.3.21 runs its AVX2 kernels on CPUs it
// does not know (this AMD EPYC: 2-4x on moe's shapes, docs/PERF.md), so it is the default when moe is built
// with oneDNN and the CPU has AVX-512F. On AVX2 CPUs both run AVX2 kernels and the shape decides (docs/PERF.md,
// measured on an AVX2 EPYC): oneDNN is 10-20% faster on decoding's GEMMs (at most ~800 rows) and OpenBLAS 5%
// faster in training (4,000-token batches), so there the default is by_rows: oneDNN for GEMMs of at most
// kOnednnRows rows, OpenBLAS above. OpenBLAS is the fallback (and does every f64 GEMM). MOE_CPU_GEMM=
// openblas|onednn|by_rows overrides the choice. Each call runs on the calling thread only: the ops split GEMMs over
// their own threads (common/cpu_threads.h), so a result never depends on a library's thread count.
// The int8 product c = a b (s8 x s8 -> s32, exact) is oneDNN's gemm_s8s8s32 where the CPU has AVX-512 VNNI
// (without it oneDNN saturates pairs of products to 16 bits), else moe's own AVX2 loops (int16 pairs summed by
// vpmaddwd, exact; ops/cpu_isa.h) or, on CPUs without AVX2, a portable loop.
// Covered by tests/ops/cpu_gemm_test.cpp.
#pragma once
#include <cstdint>

#include "common/named_enum.h"

namespace moe {

MOE_NAMED_ENUM(CpuGemmBackend, openblas, onednn, by_rows)

/// by_rows: GEMMs of at most this many rows (m) go to oneDNN, larger ones to OpenBLAS.
constexpr int64_t kOnednnRows = 1024;

/// True when moe was built with oneDNN (third_party/manifest: optional).
bool onednn_built();
/// The backend in use: MOE_CPU_GEMM when set (parsed once; an error names the variable), else, when built with
/// oneDNN, onednn where the CPU has AVX-512F and by_rows where it has AVX2, else OpenBLAS.
CpuGemmBackend cpu_gemm_backend();
/// Sets the backend (tests, benchmarks); onednn or by_rows without onednn_built() is an error.
void set_cpu_gemm_backend(CpuGemmBackend backend);

namespace cpu {
/// c = alpha op(a) op(b) + beta c, op(x) = x^T when t; op(a) [m, k], op(b) [k, n], leading dimensions as BLAS.
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
           const double* b, int64_t ldb, double beta, double* c, int64_t ldc);
/// c[m, n] = a[m, k] op(b) in exact int32 arithmetic (|k| * 127 * 127 < 2^31: k < 133,000), op(b) [k, n].
void gemm_s8s8s32(bool tb, int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b,
                  int64_t ldb, int32_t* c, int64_t ldc);
}  // namespace cpu

}  // namespace moe
