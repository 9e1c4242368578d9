// CUDA batch normalisation over the rows of [..., C] inputs (math in lib/ops/batch_norm.h).
// x in f32/bf16/f16, gamma/beta f32 or x's dtype, statistics and running estimates f32.
// Column statistics use a two-stage reduction without atomics: blocks of (32 columns x 8 row
// lanes) sum a chunk of rows each into a workspace, then one thread per column finishes (mean;
// then the variance about that mean, rstd and the running update; or sum dy and sum dy*xhat).
// y and dx are element-wise grid-stride kernels. Covered by tests/gpu/batch_norm_parity_test.cpp.
#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/batch_norm.h"

namespace moe::cuda {
namespace {

enum class Sum { x, centred_sq, grad };

// partial[0][chunk][c] = sum of a, partial[1][chunk][c] = sum of b over the chunk's rows, where
// x: a = x; centred_sq: a = (x - mean)^2; grad: a = dy*xhat, b = dy.
template <class T, Sum S>
__global__ void batch_norm_partial_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                                          const float* __restrict__ mean, const float* __restrict__ rstd,
                                          float* __restrict__ partial, long long rows, int C, long long chunk_rows) {
  __shared__ float sa[8][33], sb[8][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  const long long chunk = blockIdx.y, begin = chunk * chunk_rows;
  const long long end = begin + chunk_rows < rows ? begin + chunk_rows : rows;
  float a = 0.f, b = 0.f;
  if (col < C) {
    const float mu = S == Sum::x ? 0.f : mean[col], rs = S == Sum::grad ? rstd[col] : 0.f;
    for (long long r = begin + threadIdx.y; r < end; r += 8) {
      const float v = to_float(x[r * C + col]);
      if constexpr (S == Sum::x) a += v;
      if constexpr (S == Sum::centred_sq) a += (v - mu) * (v - mu);
      if constexpr (S == Sum::grad) {
        const float d = to_float(dy[r * C + col]);
        a += d * (v - mu) * rs;
        b += d;
      }
    }
  }
  sa[threadIdx.y][threadIdx.x] = a;
  sb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && col < C) {
    for (int k = 1; k < 8; ++k) {
      a += sa[k][threadIdx.x];
      b += sb[k][threadIdx.x];
    }
    partial[chunk * C + col] = a;
    partial[(gridDim.y + chunk) * (long long)C + col] = b;
  }
}

__device__ __forceinline__ float chunk_total(const float* partial, int which, int chunks, int C, int col) {
  float s = 0.f;
  for (int c = 0; c < chunks; ++c) s += partial[((long long)which * chunks + c) * C + col];
  return s;
}

__global__ void batch_norm_mean_kernel(const float* __restrict__ partial, float* __restrict__ mean, int chunks, int C,
                                       long long rows) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col < C) mean[col] = chunk_total(partial, 0, chunks, C, col) / static_cast<float>(rows);
}

__global__ void batch_norm_var_kernel(const float* __restrict__ partial, const float* __restrict__ mean,
                                      float* __restrict__ rstd, float* running_mean, float* running_var, int chunks,
                                      int C, long long rows, float momentum, float eps) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= C) return;
  const float var = chunk_total(partial, 0, chunks, C, col) / static_cast<float>(rows);
  rstd[col] = rsqrtf(var + eps);
  if (running_mean) {
    running_mean[col] = (1.f - momentum) * running_mean[col] + momentum * mean[col];
    running_var[col] =
        (1.f - momentum) * running_var[col] + momentum * var * static_cast<float>(rows) / static_cast<float>(rows - 1);
  }
}

__global__ void batch_norm_eval_stats_kernel(const float* __restrict__ running_mean,
                                             const float* __restrict__ running_var, float* __restrict__ mean,
                                             float* __restrict__ rstd, int C, float eps) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= C) return;
  mean[col] = running_mean[col];
  rstd[col] = rsqrtf(running_var[col] + eps);
}

template <class T, class G>
__global__ void batch_norm_apply_kernel(const T* __restrict__ x, const G* __restrict__ gamma,
                                        const G* __restrict__ beta, const float* __restrict__ mean,
                                        const float* __restrict__ rstd, T* __restrict__ y, long long n, int C) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const int c = static_cast<int>(i % C);
    const float g = gamma ? to_float(gamma[c]) : 1.f, b = beta ? to_float(beta[c]) : 0.f;
    y[i] = from_float<T>((to_float(x[i]) - mean[c]) * rstd[c] * g + b);
  }
}

// sums[0][c] = sum dy*xhat, sums[1][c] = sum dy; also adds them into dgamma / dbeta (either may be null).
template <class G>
__global__ void batch_norm_grad_sums_kernel(const float* __restrict__ partial, float* __restrict__ sums, G* dgamma,
                                            G* dbeta, int chunks, int C) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= C) return;
  const float sdyx = chunk_total(partial, 0, chunks, C, col), sdy = chunk_total(partial, 1, chunks, C, col);
  sums[col] = sdyx;
  sums[C + col] = sdy;
  if (dgamma) dgamma[col] = from_float<G>(to_float(dgamma[col]) + sdyx);
  if (dbeta) dbeta[col] = from_float<G>(to_float(dbeta[col]) + sdy);
}

template <class T, class G>
__global__ void batch_norm_dx_kernel(const T* __restrict__ x, const G* __restrict__ gamma,
                                     const float* __restrict__ mean, const float* __restrict__ rstd,
                                     const float* __restrict__ sums, const T* __restrict__ dy, T* __restrict__ dx,
                                     long long n, int C, long long rows, bool training) {
  const float inv_rows = 1.f / static_cast<float>(rows);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const int c = static_cast<int>(i % C);
    const float g = gamma ? to_float(gamma[c]) : 1.f, rs = rstd[c];
    const float xh = (to_float(x[i]) - mean[c]) * rs;
    const float centre = training ? (sums[C + c] + xh * sums[c]) * inv_rows : 0.f;
    dx[i] = from_float<T>(to_float(dx[i]) + rs * g * (to_float(dy[i]) - centre));
  }
}

// Chunking of the rows for the two-stage column reductions: about a thousand stage-1 blocks.
struct Chunks {
  unsigned tiles, count;
  long long rows_per;
};
Chunks chunking(long long rows, int C) {
  const long long tiles = (C + 31) / 32, max_chunks = rows > 0 ? (rows + 31) / 32 : 1;
  long long chunks = 1024 / tiles;
  chunks = chunks < 1 ? 1 : (chunks > max_chunks ? max_chunks : chunks);
  const long long per = rows > 0 ? (rows + chunks - 1) / chunks : 1;
  return {static_cast<unsigned>(tiles), static_cast<unsigned>(rows > 0 ? (rows + per - 1) / per : 1), per};
}

template <class T, Sum S>
void partial_sums(const T* x, const T* dy, const float* mean, const float* rstd, float* partial, long long rows, int C,
                  const Chunks& ch, cudaStream_t st) {
  batch_norm_partial_kernel<T, S>
      <<<dim3(ch.tiles, ch.count), dim3(32, 8), 0, st>>>(x, dy, mean, rstd, partial, rows, C, ch.rows_per);
  MOE_KERNEL_CHECK();
}

float* f32_ptr(const Tensor& t, const char* what) {
  if (!t.defined()) return nullptr;
  MOE_CHECK(t.dtype() == DType::f32, "batch_norm (CUDA): ", what, " must be f32, not ", dtype_name(t.dtype()));
  return static_cast<float*>(t.raw());
}

template <class T, class G>
void forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& rmean, Tensor& rvar, bool training,
             float momentum, float eps, Tensor& y, Tensor& mean, Tensor& rstd) {
  const int C = static_cast<int>(x.shape().last());
  const long long n = x.numel(), rows = n / C;
  const T* px = static_cast<const T*>(x.raw());
  float *pm = f32_ptr(mean, "mean"), *pr = f32_ptr(rstd, "rstd");
  float *prm = f32_ptr(rmean, "running_mean"), *prv = f32_ptr(rvar, "running_var");
  cudaStream_t st = stream(x.device());
  const unsigned cblocks = (C + 255) / 256;
  if (training) {
    const Chunks ch = chunking(rows, C);
    Tensor partial = Tensor::empty(Shape{2, ch.count, C}, DType::f32, x.device());
    float* pp = static_cast<float*>(partial.raw());
    partial_sums<T, Sum::x>(px, nullptr, nullptr, nullptr, pp, rows, C, ch, st);
    batch_norm_mean_kernel<<<cblocks, 256, 0, st>>>(pp, pm, static_cast<int>(ch.count), C, rows);
    MOE_KERNEL_CHECK();
    partial_sums<T, Sum::centred_sq>(px, nullptr, pm, nullptr, pp, rows, C, ch, st);
    batch_norm_var_kernel<<<cblocks, 256, 0, st>>>(pp, pm, pr, prm, prv, static_cast<int>(ch.count), C, rows, momentum,
                                                   eps);
    MOE_KERNEL_CHECK();
  } else {
    batch_norm_eval_stats_kernel<<<cblocks, 256, 0, st>>>(prm, prv, pm, pr, C, eps);
    MOE_KERNEL_CHECK();
  }
  if (n == 0) return;
  const G* pg = gamma.defined() ? static_cast<const G*>(gamma.raw()) : nullptr;
  const G* pb = beta.defined() ? static_cast<const G*>(beta.raw()) : nullptr;
  batch_norm_apply_kernel<T, G><<<grid_for(n), 256, 0, st>>>(px, pg, pb, pm, pr, static_cast<T*>(y.raw()), n, C);
  MOE_KERNEL_CHECK();
}

template <class T, class G>
void backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, bool training,
              const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const int C = static_cast<int>(x.shape().last());
  const long long n = x.numel(), rows = n / C;
  if (n == 0) return;
  const T *px = static_cast<const T*>(x.raw()), *pdy = static_cast<const T*>(dy.raw());
  const float *pm = f32_ptr(mean, "mean"), *pr = f32_ptr(rstd, "rstd");
  cudaStream_t st = stream(x.device());
  const Chunks ch = chunking(rows, C);
  Tensor work = Tensor::empty(Shape{2 * static_cast<int64_t>(ch.count) * C + 2 * C}, DType::f32, x.device());
  float *pp = static_cast<float*>(work.raw()), *sums = pp + 2LL * ch.count * C;
  partial_sums<T, Sum::grad>(px, pdy, pm, pr, pp, rows, C, ch, st);
  G* dg = dgamma.defined() ? static_cast<G*>(dgamma.raw()) : nullptr;
  G* db = dbeta.defined() ? static_cast<G*>(dbeta.raw()) : nullptr;
  batch_norm_grad_sums_kernel<G><<<(C + 255) / 256, 256, 0, st>>>(pp, sums, dg, db, static_cast<int>(ch.count), C);
  MOE_KERNEL_CHECK();
  if (!dx.defined()) return;
  const G* pg = gamma.defined() ? static_cast<const G*>(gamma.raw()) : nullptr;
  batch_norm_dx_kernel<T, G>
      <<<grid_for(n), 256, 0, st>>>(px, pg, pm, pr, sums, pdy, static_cast<T*>(dx.raw()), n, C, rows, training);
  MOE_KERNEL_CHECK();
}

bool params_f32(const Tensor& a, const Tensor& b) {
  return (!a.defined() || a.dtype() == DType::f32) && (!b.defined() || b.dtype() == DType::f32);
}

}  // namespace

void batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                        Tensor& running_var, bool training, float momentum, float eps, Tensor& y, Tensor& mean,
                        Tensor& rstd) {
  MOE_CHECK(x.shape().last() < (1LL << 31), "batch_norm: ", x.shape().last(), " columns are too many");
  const bool f32 = params_f32(gamma, beta);
  MOE_FLOAT_SWITCH(x.dtype(), "batch_norm", T, {
    if (f32)
      forward<T, float>(x, gamma, beta, running_mean, running_var, training, momentum, eps, y, mean, rstd);
    else
      forward<T, T>(x, gamma, beta, running_mean, running_var, training, momentum, eps, y, mean, rstd);
  });
}

void batch_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, bool training,
                         const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  MOE_CHECK(x.shape().last() < (1LL << 31), "batch_norm backward: ", x.shape().last(), " columns are too many");
  const bool f32 = params_f32(gamma, dgamma) && params_f32(dbeta, Tensor());
  MOE_FLOAT_SWITCH(x.dtype(), "batch_norm backward", T, {
    if (f32)
      backward<T, float>(x, gamma, mean, rstd, training, dy, dx, dgamma, dbeta);
    else
      backward<T, T>(x, gamma, mean, rstd, training, dy, dx, dgamma, dbeta);
  });
}

}  // namespace moe::cuda
