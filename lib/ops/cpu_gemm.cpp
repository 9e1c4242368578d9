// cpu_gemm.h: the backend choice and the calls into OpenBLAS, oneDNN and the int8 loops (AVX2, portable); in a
// CUDA emulator build also the GEMM of the emulated cuBLAS and cuBLASLt.
#include "ops/cpu_gemm.h"

#include <cblas.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "common/error.h"
#include "common/signal_stack.h"
#include "ops/cpu_isa.h"
#include "tensor/out_of_memory.h"

#ifdef MOE_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef MOE_CUDA_EMU
#include "moe_emu/control.h"
#endif

namespace moe {

bool onednn_built() {
#ifdef MOE_WITH_DNNL
  return true;
#else
  return false;
#endif
}

namespace {
CpuGemmBackend default_backend() {
  if (const char* v = std::getenv("MOE_CPU_GEMM"); v && *v) {
    const CpuGemmBackend b = parse_enum<CpuGemmBackend>(v, "MOE_CPU_GEMM");
    MOE_CHECK(b == CpuGemmBackend::openblas || onednn_built(), "MOE_CPU_GEMM=", v,
              ": this build of moe has no oneDNN (install libdnnl-dev and rebuild)");
    return b;
  }
  if (!onednn_built()) return CpuGemmBackend::openblas;
  return __builtin_cpu_supports("avx512f") ? CpuGemmBackend::onednn
         : __builtin_cpu_supports("avx2")  ? CpuGemmBackend::by_rows
                                           : CpuGemmBackend::openblas;
}
std::atomic<CpuGemmBackend>& backend_slot() {
  static std::atomic<CpuGemmBackend> b{default_backend()};
  return b;
}
CBLAS_TRANSPOSE blas_trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

/// While alive, oneDNN (an OpenMP library) called on this thread uses one thread: inside a parallel_for
/// (common/cpu_threads.h) it sees an active region and runs serially anyway; outside one, this thread's
/// OpenMP thread count is 1 until the scope ends. GEMMs are split by the ops, never by the library.
class OneOpenmpThread {
 public:
  OneOpenmpThread() : saved_(omp_in_parallel() ? 0 : omp_get_max_threads()) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~OneOpenmpThread() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  OneOpenmpThread(const OneOpenmpThread&) = delete;
  OneOpenmpThread& operator=(const OneOpenmpThread&) = delete;

 private:
  int saved_;
};
}  // namespace

#ifdef MOE_WITH_DNNL
namespace {
/// A failed oneDNN call: out of memory for its packing buffers (an address-space limit) is the allocator's
/// out-of-memory error, so that training names the op and the keys to lower; anything else an error.
void check_dnnl(dnnl_status_t s, const char* call, int64_t m, int64_t n, int64_t k) {
  if (s == dnnl_out_of_memory)
    throw_out_of_memory(Device::cpu(), "a request for oneDNN " + std::string(call) + "'s packing buffers (an m " +
                                           std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k) +
                                           " GEMM)");
  MOE_CHECK(s == dnnl_success, "oneDNN ", call, " failed (status ", int(s), ") on m ", m, ", n ", n, ", k ", k);
}
}  // namespace
#endif

CpuGemmBackend cpu_gemm_backend() { return backend_slot().load(std::memory_order_relaxed); }

void set_cpu_gemm_backend(CpuGemmBackend backend) {
  MOE_CHECK(backend == CpuGemmBackend::openblas || onednn_built(), "CPU GEMM backend ", enum_name(backend),
            ": moe was built without oneDNN");
  backend_slot().store(backend);
}

namespace cpu {
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
#ifdef MOE_WITH_DNNL
  const CpuGemmBackend backend = cpu_gemm_backend();
  if (backend == CpuGemmBackend::onednn || (backend == CpuGemmBackend::by_rows && m <= kOnednnRows)) {
    OneOpenmpThread one;
    use_signal_stack();  // a signal during the call must not land on oneDNN's workspace (signal_stack.h)
    const dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    check_dnnl(s, "sgemm", m, n, k);
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, blas_trans(ta), blas_trans(tb), int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
              beta, c, int(ldc));
}

#ifdef MOE_CUDA_EMU
// The CUDA emulator's cuBLAS and cuBLASLt run their GEMMs here too (moe_emu::set_host_sgemm).
[[maybe_unused]] const bool emulated_blas_registered = (moe_emu::set_host_sgemm(&sgemm), true);
#endif

void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
           const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, blas_trans(ta), blas_trans(tb), int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
              beta, c, int(ldc));
}

namespace {
MOE_AVX2 inline __m256i widen16(const int8_t* p) {  // 16 int8 -> 16 int16
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

MOE_AVX2 inline int32_t sum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1))));
}

/// c_ij = a_i . b_j (rows of b contiguous) for R rows of a and C columns: int8 widened to int16, products summed
/// in pairs into int32 lanes (vpmaddwd, exact: 2 x 128 x 128 fits), each load of a or b used C or R times.
template <int R, int C>
MOE_AVX2 inline void s8_dots_block(int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb, int32_t* c,
                                   int64_t ldc) {
  const int64_t full = k & ~int64_t(15);
  __m256i acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < C; ++q) acc[r][q] = _mm256_setzero_si256();
  for (int64_t p = 0; p < full; p += 16) {
    __m256i bv[C];
    for (int q = 0; q < C; ++q) bv[q] = widen16(b + q * ldb + p);
    for (int r = 0; r < R; ++r) {
      const __m256i av = widen16(a + r * lda + p);
      for (int q = 0; q < C; ++q) acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(av, bv[q]));
    }
  }
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < C; ++q) {
      int32_t s = sum_epi32(acc[r][q]);
      for (int64_t p = full; p < k; ++p) s += int32_t(a[r * lda + p]) * b[q * ldb + p];
      c[r * ldc + q] = s;
    }
}

MOE_AVX2 void s8_dots_avx2(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                           int32_t* c, int64_t ldc) {
  int64_t i = 0;
  for (; i + 2 <= m; i += 2) {
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) s8_dots_block<2, 4>(k, a + i * lda, lda, b + j * ldb, ldb, c + i * ldc + j, ldc);
    for (; j < n; ++j) s8_dots_block<2, 1>(k, a + i * lda, lda, b + j * ldb, ldb, c + i * ldc + j, ldc);
  }
  for (; i < m; ++i) {
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) s8_dots_block<1, 4>(k, a + i * lda, lda, b + j * ldb, ldb, c + i * ldc + j, ldc);
    for (; j < n; ++j) s8_dots_block<1, 1>(k, a + i * lda, lda, b + j * ldb, ldb, c + i * ldc + j, ldc);
  }
}

/// c_i = sum_p a_ip b_p (rows of b streamed) for R rows of a and 16 columns: rows p and p + 1 of b interleaved as
/// int16 pairs against (a_ip, a_ip+1), summed by vpmaddwd (exact), each pair of b rows used for the R rows.
template <int R>
MOE_AVX2 inline void s8_rows_block(int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb, int32_t* c,
                                   int64_t ldc) {
  const __m256i zero = _mm256_setzero_si256();
  __m256i lo[R], hi[R];  // columns {0-3, 8-11} and {4-7, 12-15} (the unpacks work per 128 bits)
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = zero;
  for (int64_t p = 0; p < k; p += 2) {
    const bool two = p + 1 < k;
    const __m256i b0 = widen16(b + p * ldb), b1 = two ? widen16(b + (p + 1) * ldb) : zero;
    const __m256i bl = _mm256_unpacklo_epi16(b0, b1), bh = _mm256_unpackhi_epi16(b0, b1);
    for (int r = 0; r < R; ++r) {
      const int8_t* ar = a + r * lda + p;
      const uint32_t pair = uint16_t(int16_t(ar[0])) | (two ? uint32_t(uint16_t(int16_t(ar[1]))) << 16 : 0u);
      const __m256i ap = _mm256_set1_epi32(int32_t(pair));
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(bl, ap));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(bh, ap));
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), _mm256_permute2x128_si256(lo[r], hi[r], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), _mm256_permute2x128_si256(lo[r], hi[r], 0x31));
  }
}

MOE_AVX2 void s8_rows_avx2(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                           int32_t* c, int64_t ldc) {
  const int64_t full = n & ~int64_t(15);
  for (int64_t j = 0; j < full; j += 16) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) s8_rows_block<4>(k, a + i * lda, lda, b + j, ldb, c + i * ldc + j, ldc);
    for (; i < m; ++i) s8_rows_block<1>(k, a + i * lda, lda, b + j, ldb, c + i * ldc + j, ldc);
  }
  for (int64_t i = 0; i < m; ++i)  // the columns past the last multiple of 16
    for (int64_t j = full; j < n; ++j) {
      int32_t s = 0;
      for (int64_t p = 0; p < k; ++p) s += int32_t(a[i * lda + p]) * b[p * ldb + j];
      c[i * ldc + j] = s;
    }
}
}  // namespace

void gemm_s8s8s32(bool tb, int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b,
                  int64_t ldb, int32_t* c, int64_t ldc) {
#ifdef MOE_WITH_DNNL
  // oneDNN's s8s8s32 is exact with AVX-512 VNNI; without it (AVX2) it sums pairs in saturating 16 bits.
  static const bool exact = __builtin_cpu_supports("avx512vnni");
  if (cpu_gemm_backend() == CpuGemmBackend::onednn && exact) {
    OneOpenmpThread one;
    use_signal_stack();
    const int32_t no_offset = 0;
    const dnnl_status_t s = dnnl_gemm_s8s8s32('N', tb ? 'T' : 'N', 'F', m, n, k, 1.f, a, lda, 0, b, ldb, 0, 0.f, c,
                                              ldc, &no_offset);
    check_dnnl(s, "gemm_s8s8s32", m, n, k);
    return;
  }
#endif
  if (cpu_isa() != CpuIsa::portable) {  // AVX2 (also on AVX-512 CPUs without VNNI): exact, as the loop below
    tb ? s8_dots_avx2(m, n, k, a, lda, b, ldb, c, ldc) : s8_rows_avx2(m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  for (int64_t i = 0; i < m; ++i) {  // the portable loop: one row of c at a time
    const int8_t* ai = a + i * lda;
    int32_t* ci = c + i * ldc;
    if (tb) {  // c_ij = a_i . b_j (rows of b contiguous)
      for (int64_t j = 0; j < n; ++j) {
        int32_t s = 0;
        for (int64_t p = 0; p < k; ++p) s += int32_t(ai[p]) * b[j * ldb + p];
        ci[j] = s;
      }
      continue;
    }
    for (int64_t j = 0; j < n; ++j) ci[j] = 0;
    for (int64_t p = 0; p < k; ++p)  // c_i += a_ip b_p (rows of b streamed)
      for (int64_t j = 0; j < n; ++j) ci[j] += int32_t(ai[p]) * b[p * ldb + j];
  }
}
}  // namespace cpu

}  // namespace moe
