// CUDA emulator: the GEMM of the emulated cuBLAS / cuBLASLt (gemm.h). f32 operands without TF32 go
// straight to the host sgemm; otherwise each batch's operands are widened to f32 (TF32-rounded when
// asked), multiplied with it and the result (with beta C and the bias) rounded once to D's type, as
// tensor-core GEMMs accumulate in f32. The host sgemm is moe's CPU GEMM dispatch once lib/ops registered
// it (set_host_sgemm: oneDNN on AVX-512), else OpenBLAS. Covered by tests/gpu/matmul_parity_test.cpp
// under the emulator.
#include "gemm.h"

#include <cblas.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "moe_emu/control.h"

namespace moe_emu {
namespace {
std::atomic<HostSgemm> g_host_sgemm{nullptr};

/// Column-major D = alpha op(A) op(B) + beta D: the row-major product Dᵀ = op(B)ᵀ op(A)ᵀ on the host sgemm.
void sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
           float beta, float* d, int ldd) {
  if (HostSgemm host = g_host_sgemm.load()) return host(tb, ta, n, m, k, alpha, b, ldb, a, lda, beta, d, ldd);
  cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, d, ldd);
}

float load(const void* p, cudaDataType_t t, long long i) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_16BF: return bf16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_16F: return half_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    default: return 0.f;
  }
}
void store(void* p, cudaDataType_t t, long long i, float v) {
  switch (t) {
    case CUDA_R_32F: static_cast<float*>(p)[i] = v; break;
    case CUDA_R_16BF: static_cast<uint16_t*>(p)[i] = float_to_bf16_bits(v); break;
    case CUDA_R_16F: static_cast<uint16_t*>(p)[i] = float_to_half_bits(v); break;
    default: break;
  }
}
float tf32(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;  // RNE to 10 mantissa bits
  std::memcpy(&v, &u, 4);
  return v;
}
/// A column-major rows x cols operand of batch `b` as dense f32 (leading dimension rows).
std::vector<float> widen(const GemmOperand& o, int rows, int cols, int b, bool round_tf32) {
  std::vector<float> out(size_t(rows) * size_t(cols));
  const long long base = o.stride * b;
  for (int c = 0; c < cols; ++c)
    for (int r = 0; r < rows; ++r) {
      const float v = load(o.ptr, o.type, base + c * o.ld + r);
      out[size_t(c) * size_t(rows) + size_t(r)] = round_tf32 ? tf32(v) : v;
    }
  return out;
}
}  // namespace

void set_host_sgemm(HostSgemm gemm) { g_host_sgemm = gemm; }

int type_bytes(cudaDataType_t type) {
  return type == CUDA_R_32F ? 4 : (type == CUDA_R_16BF || type == CUDA_R_16F) ? 2 : 0;
}

void gemm_compute(bool ta, bool tb, int m, int n, int k, float alpha, const GemmOperand& a, const GemmOperand& b,
                  float beta, const GemmOperand& c, void* d, const void* bias, int batch, bool round_tf32) {
  const bool direct = a.type == CUDA_R_32F && b.type == CUDA_R_32F && c.type == CUDA_R_32F && !round_tf32 &&
                      !bias && c.ptr == d;
  for (int i = 0; i < batch; ++i) {
    if (direct) {
      sgemm(ta, tb, m, n, k, alpha, static_cast<const float*>(a.ptr) + a.stride * i, int(a.ld),
            static_cast<const float*>(b.ptr) + b.stride * i, int(b.ld), beta, static_cast<float*>(d) + c.stride * i,
            int(c.ld));
      continue;
    }
    // op(A) is m x k: A is stored m x k (N) or k x m (T); likewise B.
    const std::vector<float> fa = widen(a, ta ? k : m, ta ? m : k, i, round_tf32);
    const std::vector<float> fb = widen(b, tb ? n : k, tb ? k : n, i, round_tf32);
    std::vector<float> fc(size_t(m) * size_t(n), 0.f);
    if (beta != 0.f) fc = widen(c, m, n, i, false);
    sgemm(ta, tb, m, n, k, alpha, fa.data(), ta ? k : m, fb.data(), tb ? n : k, beta, fc.data(), m);
    for (int col = 0; col < n; ++col)
      for (int r = 0; r < m; ++r) {
        float v = fc[size_t(col) * size_t(m) + size_t(r)];
        if (bias) v += load(bias, c.type, r);
        store(d, c.type, c.stride * i + col * c.ld + r, v);
      }
  }
}

}  // namespace moe_emu
