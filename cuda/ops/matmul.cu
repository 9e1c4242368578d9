// CUDA dense GEMMs: matmul via cublasGemmStridedBatchedEx (one call for the whole batch; a shared
// operand has stride 0), linear via cuBLASLt with the bias add fused in the epilogue
// (CUBLASLT_EPILOGUE_BIAS; falls back to GEMM + a bias kernel when no Lt algorithm fits or the bias
// is not 16-byte aligned), and
// bias_grad as a column reduction. cuBLAS is column-major, so the row-major C = op(A) op(B) is
// computed as C^T = op(B)^T op(A)^T with the operands swapped. Accumulation is always f32; bf16/f16
// use tensor cores; f32 uses full FP32 unless allow_tf32(). Covered by tests/gpu/matmul_parity_test.cpp.
#include <cublasLt.h>

#include <algorithm>
#include <cstdint>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/matmul.h"

namespace moe::cuda {
namespace {
cudaDataType_t cuda_type(DType dt) {
  switch (dt) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: MOE_FAIL("matmul: the CUDA GEMM supports f32, bf16 and f16, not ", dtype_name(dt));
  }
}
cublasComputeType_t compute_type(DType dt) {
  return dt == DType::f32 && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

template <class T>
__global__ void scale_kernel(T* c, long long n, float beta) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    c[i] = from_float<T>(beta == 0.f ? 0.f : beta * to_float(c[i]));
}

template <class T>
__global__ void add_bias_kernel(T* out, const T* bias, long long total, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x)
    out[i] = from_float<T>(to_float(out[i]) + to_float(bias[i % n]));
}

// dbias[j] += sum_i dout[i, j]: blocks of 32 columns x 32 row lanes (coalesced along columns);
// grid.y splits the rows: each slice writes an f32 partial sum, which finish_bias_grad_kernel adds
// into dbias (with one slice the block adds directly).
template <class T>
__global__ void bias_grad_kernel(const T* dout, T* dbias, float* partial, long long rows, long long n) {
  __shared__ float part[32][33];
  const long long j = blockIdx.x * 32LL + threadIdx.x;
  float s = 0.f;
  if (j < n)
    for (long long i = blockIdx.y * 32LL + threadIdx.y; i < rows; i += 32LL * gridDim.y) s += to_float(dout[i * n + j]);
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < n) {
    float t = 0.f;
    for (int r = 0; r < 32; ++r) t += part[r][threadIdx.x];
    if (partial) partial[blockIdx.y * n + j] = t;
    else dbias[j] = from_float<T>(to_float(dbias[j]) + t);
  }
}

template <class T>
__global__ void finish_bias_grad_kernel(const float* partial, T* dbias, int slices, long long n) {
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x) {
    float t = 0.f;
    for (int y = 0; y < slices; ++y) t += partial[y * n + j];
    dbias[j] = from_float<T>(to_float(dbias[j]) + t);
  }
}

void scale_output(Tensor& out, float beta) {
  const long long n = out.numel();
  if (n == 0 || beta == 1.f) return;
  MOE_FLOAT_SWITCH(out.dtype(), "matmul", T, {
    scale_kernel<T><<<grid_for(n), 256, 0, stream(out.device())>>>(static_cast<T*>(out.raw()), n, beta);
  });
  MOE_KERNEL_CHECK();
}

void gemm(const Tensor& a, const Tensor& b, Tensor& out, bool ta, bool tb, const MatmulPlan& p, float alpha,
          float beta) {
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  if (p.k == 0) return scale_output(out, beta);
  MOE_CHECK(p.m < INT32_MAX && p.n < INT32_MAX && p.k < INT32_MAX && p.batch < INT32_MAX, "matmul: sizes too large for cuBLAS (m ",
            p.m, ", n ", p.n, ", k ", p.k, ")");
  const int dev = a.device().index;
  cublasHandle_t h = cublas(dev);
  CUBLAS_CHECK(cublasSetStream(h, stream(dev)));
  const cudaDataType_t t = cuda_type(a.dtype());
  const int m = int(p.m), n = int(p.n), k = int(p.k);
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                                          &alpha, b.raw(), t, tb ? k : n, p.stride_b, a.raw(), t, ta ? m : k,
                                          p.stride_a, &beta, out.raw(), t, n, p.stride_c, int(p.batch),
                                          compute_type(a.dtype()), CUBLAS_GEMM_DEFAULT));
}

uint32_t alignment_of(const void* p) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a) a /= 2;
  return a;
}

// out^T[n, m] = w^T[n, k] x^T[k, m] + bias (per row of the column-major result), in one cuBLASLt call.
// Returns false (nothing launched) when cuBLASLt offers no algorithm for these shapes/alignments.
bool lt_linear(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out, const MatmulPlan& p) {
  const int dev = x.device().index;
  const cudaDataType_t t = cuda_type(x.dtype());
  const int64_t m = p.m, n = p.n, k = p.k;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  bool ok = false;
  auto cleanup = [&] {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
  };
  try {
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, compute_type(x.dtype()), CUDA_R_32F));
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const void* bias_ptr = bias.raw();
    const int32_t bias_type = t;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, t, uint64_t(n), uint64_t(k), n));  // w as column-major [n, k]
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, t, uint64_t(k), uint64_t(m), k));  // x as column-major [k, m]
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, t, uint64_t(n), uint64_t(m), n));  // out as column-major [n, m]
    size_t ws_bytes = 0;
    void* ws = cublas_workspace(dev, &ws_bytes);
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                      sizeof(ws_bytes)));
    const uint32_t al_a = alignment_of(w.raw()), al_b = alignment_of(x.raw()), al_c = alignment_of(out.raw());
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(cublas_lt(dev), op, la, lb, lc, lc, pref, 1, &result, &found);
    if (st == CUBLAS_STATUS_SUCCESS && found > 0) {
      const float alpha = 1.f, beta = 0.f;
      CUBLAS_CHECK(cublasLtMatmul(cublas_lt(dev), op, &alpha, w.raw(), la, x.raw(), lb, &beta, out.raw(), lc,
                                  out.raw(), lc, &result.algo, ws, ws_bytes, stream(dev)));
      ok = true;
    }
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  return ok;
}
}  // namespace

void matmul_forward(const Tensor& a, const Tensor& b, Tensor& out, bool ta, bool tb, float alpha, float beta) {
  gemm(a, b, out, ta, tb, matmul_plan(a.shape(), b.shape(), ta, tb), alpha, beta);
}

void linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out) {
  const MatmulPlan p = matmul_plan(x.shape(), w.shape(), false, false, "linear");
  if (p.m == 0 || p.n == 0) return;
  // cuBLASLt's bias epilogue reads the bias with 16-byte loads: a less aligned bias (a view at an odd
  // offset) takes the GEMM + bias-kernel path.
  if (bias.defined() && p.k > 0 && p.m < INT32_MAX && alignment_of(bias.raw()) >= 16 && lt_linear(x, w, bias, out, p))
    return;
  gemm(x, w, out, false, false, p, 1.f, 0.f);
  if (!bias.defined()) return;
  const long long total = out.numel();
  MOE_FLOAT_SWITCH(x.dtype(), "linear", T, {
    add_bias_kernel<T><<<grid_for(total), 256, 0, stream(x.device())>>>(
        static_cast<T*>(out.raw()), static_cast<const T*>(bias.raw()), total, p.n);
  });
  MOE_KERNEL_CHECK();
}

void bias_grad(const Tensor& dout, Tensor& dbias) {
  const long long n = dbias.numel();
  if (n == 0) return;
  const long long rows = dout.numel() / n, bx = (n + 31) / 32;
  // Enough blocks to fill the GPU (~4 per SM of an H100), but slices of at least 32 rows.
  const long long slices = std::max(1LL, std::min((528 + bx - 1) / bx, (rows + 255) / 256));
  Tensor partial;
  if (slices > 1) partial = Tensor::empty(Shape{slices, n}, DType::f32, dout.device());
  float* pp = slices > 1 ? partial.data<float>() : nullptr;
  cudaStream_t s = stream(dout.device());
  MOE_FLOAT_SWITCH(dout.dtype(), "bias_grad", T, {
    bias_grad_kernel<T><<<dim3(unsigned(bx), unsigned(slices)), dim3(32, 32), 0, s>>>(
        static_cast<const T*>(dout.raw()), static_cast<T*>(dbias.raw()), pp, rows, n);
    MOE_KERNEL_CHECK();
    if (pp) finish_bias_grad_kernel<T><<<grid_for(n), 256, 0, s>>>(pp, static_cast<T*>(dbias.raw()), int(slices), n);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
