// The CPU GEMM backends behind every dense and grouped GEMM of lib/ops (matmul.cpp, grouped_gemm.cpp,
// int8_gemm.cpp): c = alpha op(a) op(b) + beta c (row-major) by OpenBLAS or oneDNN, chosen once per
// process. oneDNN's JIT sgemm uses AVX-512 where Debian's OpenBLAS 0.3.21 runs its AVX2 kernels on CPUs it
// does not know (this AMD EPYC: 2-4x on moe's shapes, docs/PERF.md), so it is the default when moe is built
// with oneDNN and the CPU has AVX-512F. On AVX2 CPUs both run AVX2 kernels and the shape decides (docs/PERF.md,
// measured on an AVX2 EPYC): oneDNN is 10-20% faster on decoding's GEMMs (at most ~800 rows) and OpenBLAS 5%
// faster in training (4,000-token batches), and 1.3-2.2x faster on the weight gradients x^T dy (a transposed, k
// the batch's tokens), so there the default is by_rows: oneDNN for GEMMs of at most kOnednnRows rows whose left
// operand is not transposed, OpenBLAS for the others. OpenBLAS is the fallback (and does every f64 GEMM). MOE_CPU_GEMM=
// openblas|onednn|by_rows overrides the choice. Each call runs on the calling thread only: the ops split GEMMs over
// their own threads (common/cpu_threads.h), so a result never depends on a library's thread count.
// The int8 product c = a b (s8 x s8 -> s32, exact) is oneDNN's gemm_s8s8s32 where the CPU has AVX-512 VNNI
// (without it oneDNN saturates pairs of products to 16 bits), else moe's own AVX2 kernel (unsigned bytes a + 128
// times b in [-64, 64] by vpmaddubsw, exact, over b packed into panels: ops/int8_panels.cpp, ops/cpu_isa.h) or,
// on CPUs without AVX2 or for b past that range, a portable loop. The int8 weights of a model are packed once
// (Int8Matrix::panels, ops/int8_gemm.h). Covered by tests/ops/cpu_gemm_test.cpp.
#pragma once
#include <cstdint>
#include <string>

#include "common/named_enum.h"
#include "ops/cpu_isa.h"

namespace moe {

MOE_NAMED_ENUM(CpuGemmBackend, openblas, onednn, by_rows)

/// by_rows: GEMMs of at most this many rows (m) go to oneDNN, larger ones to OpenBLAS.
constexpr int64_t kOnednnRows = 1024;
/// Whether by_rows gives the GEMM op(a) [m, k] op(b) to oneDNN.
inline bool by_rows_takes_onednn(bool ta, int64_t m) { return !ta && m <= kOnednnRows; }

/// True when moe was built with oneDNN (third_party/manifest: optional).
bool onednn_built();
/// The backend in use: MOE_CPU_GEMM when set (parsed once; an error names the variable), else, when built with
/// oneDNN, onednn where the CPU has AVX-512F and by_rows where it has AVX2, else OpenBLAS.
CpuGemmBackend cpu_gemm_backend();
/// Sets the backend (tests, benchmarks); onednn or by_rows without onednn_built() is an error.
void set_cpu_gemm_backend(CpuGemmBackend backend);

/// What runs this process's CPU work, for benchmark records and logs (moe-bench --cpu-info, moe-train's log).
struct CpuComputeInfo {
  std::string cpu;                // the model name in /proc/cpuinfo
  CpuIsa kernels;                 // moe's own row and int8 kernels (ops/cpu_isa.h)
  CpuGemmBackend gemm;            // the f32 GEMMs
  std::string openblas;           // OpenBLAS's kernel set (common/openblas_core.h)
  std::string openblas_coretype;  // OPENBLAS_CORETYPE as this process found it (set by moe's rerun or the user)
};
CpuComputeInfo cpu_compute_info();
/// "AMD EPYC: avx2 kernels, f32 GEMMs by_rows, OpenBLAS Zen"
std::string describe(const CpuComputeInfo& info);

namespace cpu {
/// c = alpha op(a) op(b) + beta c, op(x) = x^T when t; op(a) [m, k], op(b) [k, n], leading dimensions as BLAS.
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
           const double* b, int64_t ldb, double beta, double* c, int64_t ldc);
/// c[m, n] = a[m, k] op(b) in exact int32 arithmetic (|k| * 127 * 127 < 2^31: k < 133,000), op(b) [k, n].
void gemm_s8s8s32(bool tb, int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b,
                  int64_t ldb, int32_t* c, int64_t ldc);

/// Whether gemm_s8s8s32 runs the AVX2 panel kernel below (AVX2 or wider, and not oneDNN with AVX-512 VNNI), for
/// right operands in [-64, 64] (s8_panels_exact_for; quantized weights are: ops/int8_gemm.h).
bool s8_panels_run();
/// Whether every entry of b [rows, cols] (ldb apart) is in [-64, 64], the panel kernel's exact range.
bool s8_panels_exact_for(const int8_t* b, int64_t rows, int64_t cols, int64_t ldb);
/// op(b) [k, n] rearranged for gemm_s8_panels into out[s8_panels_bytes(k, n)]: panels of 8 columns, each holding
/// for every quad of rows 4t..4t + 3 the 32 bytes b[4t + r][c] of its columns c (r fastest), zeros past k and n, then
/// the 8 int32 128 sum_k b[k][c] (ops/int8_panels.cpp).
int64_t s8_panels_bytes(int64_t k, int64_t n);
void pack_s8_panels(bool tb, int64_t k, int64_t n, const int8_t* b, int64_t ldb, int8_t* out);
/// The row length of a as the kernel reads it: k rounded up to a multiple of 4.
inline int64_t s8_quads_width(int64_t k) { return (k + 3) / 4 * 4; }
/// a [m, k] int8 as unsigned bytes a + 128, rows of s8_quads_width(k) (128, that is 0, past k): the left operand of
/// gemm_s8_panels.
void s8_to_u8_quads(int64_t m, int64_t k, const int8_t* a, int64_t lda, uint8_t* out);
/// Columns [8 p0, min(8 p1, n)) of the product a op(b) [m, n], exact, into c (its column 8 p0, rows ldc apart), from
/// the panels p0..p1 of op(b) packed as above; a as above, lda apart. Needs AVX2 (s8_panels_run()) and op(b) in
/// [-64, 64].
void gemm_s8_panels(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* panels, int64_t p0,
                    int64_t p1, int32_t* c, int64_t ldc);
/// The same columns scaled in the kernel: out[i][j] = (accumulate ? out[i][j] : 0) + float(c_ij) (row_scale[i]
/// col_scale[j]), rounded as written (ops/int8_gemm.h); out and col_scale point at column 8 p0.
void gemm_s8_panels_scaled(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* panels,
                           int64_t p0, int64_t p1, const float* row_scale, const float* col_scale, float* out,
                           int64_t ldo, bool accumulate);
}  // namespace cpu

}  // namespace moe
