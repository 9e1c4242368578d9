// CUDA layer normalisation (math in lib/ops/layer_norm.h). x in f32/bf16/f16, gamma/beta in f32
// (masters) or x's dtype, statistics and all arithmetic in f32.
// Row kernels: one warp per row for d <= 1024 (forward: the row is read once into registers), one
// block per row above; two-pass mean/variance (no cancellation), 16-byte packed loads/stores when
// rows are aligned. dgamma/dbeta: a two-stage
// column reduction (per-chunk partial sums into a workspace, then one thread per column), no atomics.
// Covered by tests/gpu/layer_norm_parity_test.cpp.
#include "common/context.h"
#include "common/cuda_check.h"
#include "ops/layer_norm.h"
#include "ops/softmax.cuh"

namespace moe::cuda {
namespace {

template <bool WARP>
struct Group {
  int lane, size;
  long long first, stride;
  __device__ Group() {
    lane = WARP ? threadIdx.x & 31 : threadIdx.x;
    size = WARP ? 32 : blockDim.x;
    first = WARP ? blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5) : blockIdx.x;
    stride = WARP ? (long long)gridDim.x * (blockDim.x >> 5) : gridDim.x;
  }
};

template <class G>
__device__ __forceinline__ float param(const G* p, int j, float fill) {
  return p ? to_float(p[j]) : fill;
}

template <class T, class G, int VEC, bool WARP>
__global__ void layer_norm_forward_kernel(const T* __restrict__ x, const G* __restrict__ gamma,
                                          const G* __restrict__ beta, T* __restrict__ y, float* __restrict__ mean,
                                          float* __restrict__ rstd, long long rows, int d, float eps) {
  __shared__ float scratch[32];
  const Group<WARP> g;
  for (long long r = g.first; r < rows; r += g.stride) {
    const T* xr = x + r * d;
    float s = 0.f;
    for (int i = g.lane * VEC; i < d; i += g.size * VEC) {
      const Pack<T, VEC> p = load_pack<T, VEC>(xr + i);
#pragma unroll
      for (int k = 0; k < VEC; ++k) s += to_float(p.v[k]);
    }
    const float mu = group_sum<WARP>(s, scratch) / d;
    float v = 0.f;
    for (int i = g.lane * VEC; i < d; i += g.size * VEC) {
      const Pack<T, VEC> p = load_pack<T, VEC>(xr + i);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float c = to_float(p.v[k]) - mu;
        v += c * c;
      }
    }
    const float rs = rsqrtf(group_sum<WARP>(v, scratch) / d + eps);
    if (g.lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
    for (int i = g.lane * VEC; i < d; i += g.size * VEC) {
      const Pack<T, VEC> p = load_pack<T, VEC>(xr + i);
      Pack<T, VEC> o;
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        o.v[k] = from_float<T>((to_float(p.v[k]) - mu) * rs * param(gamma, i + k, 1.f) + param(beta, i + k, 0.f));
      store_pack<T, VEC>(y + r * d + i, o);
    }
  }
}

// Rows of d <= 1024: one warp per row with the row held in registers (read once from memory):
// lane l holds packs l, l+32, ... (at most 32 / VEC packs of VEC elements, i.e. 32 floats).
template <class T, class G, int VEC>
__global__ void layer_norm_forward_warp_kernel(const T* __restrict__ x, const G* __restrict__ gamma,
                                               const G* __restrict__ beta, T* __restrict__ y, float* __restrict__ mean,
                                               float* __restrict__ rstd, long long rows, int d, float eps) {
  constexpr int kPacks = 32 / VEC;
  const int lane = threadIdx.x & 31;
  const long long stride = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long r = blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += stride) {
    const T* xr = x + r * d;
    float v[kPacks][VEC];
    float s = 0.f;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int i = (p * 32 + lane) * VEC;
      if (i < d) {
        const Pack<T, VEC> pk = load_pack<T, VEC>(xr + i);
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          v[p][k] = to_float(pk.v[k]);
          s += v[p][k];
        }
      }
    }
    const float mu = warp_sum(s) / d;
    float q = 0.f;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if ((p * 32 + lane) * VEC < d) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) q += (v[p][k] - mu) * (v[p][k] - mu);
      }
    }
    const float rs = rsqrtf(warp_sum(q) / d + eps);
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int i = (p * 32 + lane) * VEC;
      if (i < d) {
        Pack<T, VEC> o;
#pragma unroll
        for (int k = 0; k < VEC; ++k)
          o.v[k] = from_float<T>((v[p][k] - mu) * rs * param(gamma, i + k, 1.f) + param(beta, i + k, 0.f));
        store_pack<T, VEC>(y + r * d + i, o);
      }
    }
  }
}

template <class T, class G, int VEC, bool WARP>
__global__ void layer_norm_backward_dx_kernel(const T* __restrict__ x, const G* __restrict__ gamma,
                                              const float* __restrict__ mean, const float* __restrict__ rstd,
                                              const T* __restrict__ dy, T* __restrict__ dx, long long rows, int d) {
  __shared__ float scratch[32];
  const Group<WARP> g;
  for (long long r = g.first; r < rows; r += g.stride) {
    const T *xr = x + r * d, *dyr = dy + r * d;
    const float mu = mean[r], rs = rstd[r];
    float a = 0.f, b = 0.f;
    for (int i = g.lane * VEC; i < d; i += g.size * VEC) {
      const Pack<T, VEC> px = load_pack<T, VEC>(xr + i), pd = load_pack<T, VEC>(dyr + i);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        // __fmul_rn: no FMA contraction, so both loops see the same rounded gj and, for a row of one
        // element (or a constant row), gj - a is exactly 0 as on the CPU, not the product's rounding
        // error magnified by rstd (up to 1 / sqrt(eps)).
        const float gj = __fmul_rn(to_float(pd.v[k]), param(gamma, i + k, 1.f));
        a += gj;
        b += gj * (to_float(px.v[k]) - mu) * rs;
      }
    }
    a = group_sum<WARP>(a, scratch) / d;
    b = group_sum<WARP>(b, scratch) / d;
    for (int i = g.lane * VEC; i < d; i += g.size * VEC) {
      const Pack<T, VEC> px = load_pack<T, VEC>(xr + i), pd = load_pack<T, VEC>(dyr + i);
      Pack<T, VEC> o = load_pack<T, VEC>(dx + r * d + i);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float gj = __fmul_rn(to_float(pd.v[k]), param(gamma, i + k, 1.f)), xh = (to_float(px.v[k]) - mu) * rs;
        o.v[k] = from_float<T>(to_float(o.v[k]) + rs * (gj - a - xh * b));
      }
      store_pack<T, VEC>(dx + r * d + i, o);
    }
  }
}

// Stage 1: block (32, 8) sums dy*xhat and dy over its chunk of rows for 32 columns;
// partial[0][chunk][col] = sum dy*xhat, partial[1][chunk][col] = sum dy.
template <class T>
__global__ void layer_norm_param_partial_kernel(const T* __restrict__ x, const float* __restrict__ mean,
                                                const float* __restrict__ rstd, const T* __restrict__ dy,
                                                float* __restrict__ partial, long long rows, int d,
                                                long long chunk_rows) {
  __shared__ float sg[8][33], sb[8][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  const long long chunk = blockIdx.y, begin = chunk * chunk_rows;
  const long long end = begin + chunk_rows < rows ? begin + chunk_rows : rows;
  float ag = 0.f, ab = 0.f;
  if (col < d) {
    for (long long r = begin + threadIdx.y; r < end; r += 8) {
      const float dv = to_float(dy[r * d + col]);
      ag += dv * (to_float(x[r * d + col]) - mean[r]) * rstd[r];
      ab += dv;
    }
  }
  sg[threadIdx.y][threadIdx.x] = ag;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && col < d) {
    for (int k = 1; k < 8; ++k) {
      ag += sg[k][threadIdx.x];
      ab += sb[k][threadIdx.x];
    }
    partial[chunk * d + col] = ag;
    partial[(gridDim.y + chunk) * (long long)d + col] = ab;
  }
}

// Stage 2: one thread per column adds the chunk sums into dgamma / dbeta (either may be null).
template <class G>
__global__ void layer_norm_param_final_kernel(const float* __restrict__ partial, G* dgamma, G* dbeta, int chunks,
                                              int d) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= d) return;
  float ag = 0.f, ab = 0.f;
  for (int c = 0; c < chunks; ++c) {
    ag += partial[(long long)c * d + col];
    ab += partial[(long long)(chunks + c) * d + col];
  }
  if (dgamma) dgamma[col] = from_float<G>(to_float(dgamma[col]) + ag);
  if (dbeta) dbeta[col] = from_float<G>(to_float(dbeta[col]) + ab);
}

struct Launch {
  bool warp;
  unsigned blocks, threads;
};
Launch row_launch(long long rows, int d) {
  if (d <= 1024) return {true, grid_for(rows * 32, 256), 256};
  return {false, static_cast<unsigned>(rows < (1LL << 20) ? rows : 1LL << 20), d >= 4096 ? 512u : 256u};
}

template <class T, class G>
void forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& mean, Tensor& rstd,
             float eps) {
  const int d = static_cast<int>(x.shape().last());
  const long long rows = x.numel() / d;
  const T* px = static_cast<const T*>(x.raw());
  T* py = static_cast<T*>(y.raw());
  const G* pg = gamma.defined() ? static_cast<const G*>(gamma.raw()) : nullptr;
  const G* pb = beta.defined() ? static_cast<const G*>(beta.raw()) : nullptr;
  float *pm = static_cast<float*>(mean.raw()), *pr = static_cast<float*>(rstd.raw());
  const Launch l = row_launch(rows, d);
  cudaStream_t st = stream(x.device());
  constexpr int V = 16 / sizeof(T);
  const bool vec = pack_width<T>(d, {px, py}) == V;
  if (l.warp && vec)
    layer_norm_forward_warp_kernel<T, G, V><<<l.blocks, l.threads, 0, st>>>(px, pg, pb, py, pm, pr, rows, d, eps);
  else if (l.warp)
    layer_norm_forward_warp_kernel<T, G, 1><<<l.blocks, l.threads, 0, st>>>(px, pg, pb, py, pm, pr, rows, d, eps);
  else if (vec)
    layer_norm_forward_kernel<T, G, V, false><<<l.blocks, l.threads, 0, st>>>(px, pg, pb, py, pm, pr, rows, d, eps);
  else
    layer_norm_forward_kernel<T, G, 1, false><<<l.blocks, l.threads, 0, st>>>(px, pg, pb, py, pm, pr, rows, d, eps);
  MOE_KERNEL_CHECK();
}

template <class T, class G>
void backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
              Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const int d = static_cast<int>(x.shape().last());
  const long long rows = x.numel() / d;
  const T *px = static_cast<const T*>(x.raw()), *pdy = static_cast<const T*>(dy.raw());
  const G* pg = gamma.defined() ? static_cast<const G*>(gamma.raw()) : nullptr;
  const float *pm = static_cast<const float*>(mean.raw()), *pr = static_cast<const float*>(rstd.raw());
  cudaStream_t st = stream(x.device());
  if (dx.defined()) {
    T* pdx = static_cast<T*>(dx.raw());
    const Launch l = row_launch(rows, d);
    constexpr int V = 16 / sizeof(T);
    const bool vec = pack_width<T>(d, {px, pdy, pdx}) == V;
    if (l.warp && vec)
      layer_norm_backward_dx_kernel<T, G, V, true><<<l.blocks, l.threads, 0, st>>>(px, pg, pm, pr, pdy, pdx, rows, d);
    else if (l.warp)
      layer_norm_backward_dx_kernel<T, G, 1, true><<<l.blocks, l.threads, 0, st>>>(px, pg, pm, pr, pdy, pdx, rows, d);
    else if (vec)
      layer_norm_backward_dx_kernel<T, G, V, false><<<l.blocks, l.threads, 0, st>>>(px, pg, pm, pr, pdy, pdx, rows, d);
    else
      layer_norm_backward_dx_kernel<T, G, 1, false><<<l.blocks, l.threads, 0, st>>>(px, pg, pm, pr, pdy, pdx, rows, d);
    MOE_KERNEL_CHECK();
  }
  if (!dgamma.defined() && !dbeta.defined()) return;
  const long long tiles = (d + 31) / 32;
  long long chunks = 1024 / tiles;                // about a thousand blocks in stage 1
  const long long max_chunks = (rows + 31) / 32;  // at least 32 rows per chunk
  chunks = chunks < 1 ? 1 : (chunks > max_chunks ? max_chunks : chunks);
  const long long chunk_rows = (rows + chunks - 1) / chunks;
  chunks = (rows + chunk_rows - 1) / chunk_rows;
  Tensor partial = Tensor::empty(Shape{2, chunks, d}, DType::f32, x.device());
  float* pp = static_cast<float*>(partial.raw());
  layer_norm_param_partial_kernel<T>
      <<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks)), dim3(32, 8), 0, st>>>(px, pm, pr, pdy, pp,
                                                                                                  rows, d, chunk_rows);
  MOE_KERNEL_CHECK();
  G* dg = dgamma.defined() ? static_cast<G*>(dgamma.raw()) : nullptr;
  G* db = dbeta.defined() ? static_cast<G*>(dbeta.raw()) : nullptr;
  layer_norm_param_final_kernel<G><<<(d + 255) / 256, 256, 0, st>>>(pp, dg, db, static_cast<int>(chunks), d);
  MOE_KERNEL_CHECK();
}

bool params_f32(const Tensor& a, const Tensor& b) {
  return (!a.defined() || a.dtype() == DType::f32) && (!b.defined() || b.dtype() == DType::f32);
}

}  // namespace

void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& mean, Tensor& rstd,
                        float eps) {
  MOE_CHECK(x.shape().last() < (1LL << 31), "layer_norm: rows of ", x.shape().last(), " elements are too long");
  const bool f32 = params_f32(gamma, beta);
  MOE_FLOAT_SWITCH(x.dtype(), "layer_norm", T, {
    if (f32)
      forward<T, float>(x, gamma, beta, y, mean, rstd, eps);
    else
      forward<T, T>(x, gamma, beta, y, mean, rstd, eps);
  });
}

void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                         Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  MOE_CHECK(x.shape().last() < (1LL << 31), "layer_norm backward: rows of ", x.shape().last(),
            " elements are too long");
  const bool f32 = params_f32(gamma, dgamma) && params_f32(dbeta, Tensor());
  MOE_FLOAT_SWITCH(x.dtype(), "layer_norm backward", T, {
    if (f32)
      backward<T, float>(x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
    else
      backward<T, T>(x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
  });
}

}  // namespace moe::cuda
