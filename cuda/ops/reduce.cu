// CUDA kernels of the axis reductions x[outer, n, inner] -> y[outer, inner] (math in lib/ops/reduce.h)
// and of sum_to_shape. Last axis (inner == 1): a warp per row for n <= 1024, a 512-thread block per
// row above. Inner axes: 32x8 blocks, the 32 lanes over consecutive inner positions (coalesced),
// the 8 rows of threads splitting n; sum/mean with few blocks also split n across blockIdx.z into
// an f32 workspace that a second kernel adds up. Two passes for logsumexp (max, then sum of exp)
// and var (mean, then squared deviations); their backward recomputes the row statistic in f32.
// f32 accumulation. Tests: tests/gpu/reduce_parity_test.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "common/reduce.cuh"
#include "ops/binary_math.h"
#include "ops/reduce.h"

namespace moe::cuda {
namespace {

__device__ __forceinline__ bool uses_max(ReduceOp op) { return op == ReduceOp::max || op == ReduceOp::logsumexp; }

/// The result from the pass-1 value r (sum or max) and, for logsumexp/var, the pass-2 sum t.
__device__ __forceinline__ float finish(ReduceOp op, float r, float t, long long n) {
  switch (op) {
    case ReduceOp::mean:
      return r / float(n);
    case ReduceOp::logsumexp:
      return isinf(r) ? r : r + logf(t);
    case ReduceOp::var:
      return t / float(n);
    default:
      return r;
  }
}

template <class T, class TO, bool kBlock>
__global__ void reduce_last_kernel(ReduceOp op, const T* x, long long rows, long long n, TO* y, bool accumulate) {
  __shared__ float scratch[32];
  const int group = kBlock ? blockDim.x : 32;
  const int t = kBlock ? threadIdx.x : (threadIdx.x & 31);
  const long long per_block = kBlock ? 1 : blockDim.x / 32;
  const long long first = blockIdx.x * per_block + (kBlock ? 0 : threadIdx.x / 32);
  auto all_sum = [&](float v) {
    if constexpr (kBlock)
      return block_sum(v, scratch);
    else
      return warp_sum(v);
  };
  auto all_max = [&](float v) {
    if constexpr (kBlock)
      return block_max(v, scratch);
    else
      return warp_max(v);
  };
  for (long long row = first; row < rows; row += (long long)gridDim.x * per_block) {
    const T* p = x + row * n;
    const bool mx = uses_max(op);
    float v = mx ? -INFINITY : 0.f;
    for (long long k = t; k < n; k += group) v = mx ? fmaxf(v, to_float(p[k])) : v + to_float(p[k]);
    const float r = mx ? all_max(v) : all_sum(v);
    float s = 0.f;
    if (op == ReduceOp::logsumexp || op == ReduceOp::var) {
      const float c = op == ReduceOp::var ? r / float(n) : r;
      for (long long k = t; k < n; k += group) {
        const float e = to_float(p[k]) - c;
        s += op == ReduceOp::var ? e * e : expf(e);
      }
      s = all_sum(s);
    }
    if (t == 0) {
      const float res = finish(op, r, s, n);
      y[row] = from_float<TO>(accumulate ? to_float(y[row]) + res : res);
    }
  }
}

/// Sum (or max) over the 8 thread rows of a 32x8 block; every thread gets its column's result.
__device__ __forceinline__ float column_all(float (*sm)[33], float v, bool mx) {
  __syncthreads();  // earlier readers of sm are done
  sm[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  float r = sm[0][threadIdx.x];
#pragma unroll
  for (int q = 1; q < 8; ++q) r = mx ? fmaxf(r, sm[q][threadIdx.x]) : r + sm[q][threadIdx.x];
  return r;
}

/// Inner-axis reduction; with `partial` (sum/mean only) block z sums rows [z*chunk, (z+1)*chunk)
/// into partial[z][outer*inner] instead of writing y.
template <class T, class TO>
__global__ void reduce_inner_kernel(ReduceOp op, const T* x, long long outer, long long n, long long inner,
                                    long long chunk, TO* y, float* partial, bool accumulate) {
  __shared__ float sm[8][33];
  const long long j = blockIdx.x * 32LL + threadIdx.x;
  const bool valid = j < inner;
  const long long k0 = blockIdx.z * chunk, k1 = min(n, k0 + chunk);
  const bool mx = uses_max(op);
  for (long long o = blockIdx.y; o < outer; o += gridDim.y) {
    const T* p = x + o * n * inner + j;
    float v = mx ? -INFINITY : 0.f;
    if (valid)
      for (long long k = k0 + threadIdx.y; k < k1; k += 8)
        v = mx ? fmaxf(v, to_float(p[k * inner])) : v + to_float(p[k * inner]);
    const float r = column_all(sm, v, mx);
    float s = 0.f;
    if (op == ReduceOp::logsumexp || op == ReduceOp::var) {
      const float c = op == ReduceOp::var ? r / float(n) : r;
      if (valid)
        for (long long k = k0 + threadIdx.y; k < k1; k += 8) {
          const float e = to_float(p[k * inner]) - c;
          s += op == ReduceOp::var ? e * e : expf(e);
        }
      s = column_all(sm, s, false);
    }
    if (valid && threadIdx.y == 0) {
      const long long yi = o * inner + j;
      if (partial)
        partial[blockIdx.z * outer * inner + yi] = r;
      else {
        const float res = finish(op, r, s, n);
        y[yi] = from_float<TO>(accumulate ? to_float(y[yi]) + res : res);
      }
    }
  }
}

template <class TO>
__global__ void reduce_splits_kernel(const float* partial, int splits, long long m, float scale, TO* y,
                                     bool accumulate) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < m; i += (long long)gridDim.x * blockDim.x) {
    float s = 0.f;
    for (int z = 0; z < splits; ++z) s += partial[z * m + i];
    s *= scale;
    y[i] = from_float<TO>(accumulate ? to_float(y[i]) + s : s);
  }
}

/// `stat` (f32, per output) is the mean for var and the logsumexp itself for logsumexp, recomputed
/// in f32 so that a bf16-rounded forward output does not bias the gradient.
template <class T>
__global__ void reduce_backward_kernel(ReduceOp op, const T* x, const T* dy, const float* stat, long long n,
                                       long long inner, long long total, T* dx) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long o = i / (n * inner), j = i % inner, yi = o * inner + j;
    const float g = to_float(dy[yi]);
    float d = g;
    if (op == ReduceOp::mean)
      d = g / float(n);
    else if (op == ReduceOp::logsumexp)
      d = g * expf(to_float(x[i]) - stat[yi]);
    else if (op == ReduceOp::var)
      d = g * 2.f * (to_float(x[i]) - stat[yi]) / float(n);
    dx[i] = from_float<T>(to_float(dx[i]) + d);
  }
}

/// max backward: one thread per output finds the first element equal to the maximum.
template <class T>
__global__ void max_backward_kernel(const T* x, const T* y, const T* dy, long long n, long long inner, long long m,
                                    T* dx) {
  for (long long yi = blockIdx.x * (long long)blockDim.x + threadIdx.x; yi < m;
       yi += (long long)gridDim.x * blockDim.x) {
    const long long o = yi / inner, j = yi - o * inner;
    const float target = to_float(y[yi]);
    for (long long k = 0; k < n; ++k) {
      const long long i = (o * n + k) * inner + j;
      if (to_float(x[i]) == target) {
        dx[i] = from_float<T>(to_float(dx[i]) + to_float(dy[yi]));
        break;
      }
    }
  }
}

constexpr long long kMaxGrid = 1LL << 20;

template <class T, class TO>
void launch_reduce(ReduceOp op, const T* x, long long outer, long long n, long long inner, TO* y, bool accumulate,
                   Device device) {
  cudaStream_t s = stream(device);
  if (outer * inner == 0) return;
  if (inner == 1) {
    if (n <= 1024) {
      const unsigned blocks = static_cast<unsigned>(std::min((outer + 7) / 8, kMaxGrid));
      reduce_last_kernel<T, TO, false><<<blocks, 256, 0, s>>>(op, x, outer, n, y, accumulate);
    } else {
      const unsigned blocks = static_cast<unsigned>(std::min(outer, kMaxGrid));
      reduce_last_kernel<T, TO, true><<<blocks, 512, 0, s>>>(op, x, outer, n, y, accumulate);
    }
    MOE_KERNEL_CHECK();
    return;
  }
  const long long bx = (inner + 31) / 32, by = std::min(outer, 65535LL);
  MOE_CHECK(bx <= 0x7fffffffLL, "reduce: inner extent ", inner, " is too large for one launch");
  long long splits = 1;
  const long long target_blocks = 4 * 132;  // a few waves on an H100
  if ((op == ReduceOp::sum || op == ReduceOp::mean) && bx * by < target_blocks && n >= 512)
    splits = std::min({(target_blocks + bx * by - 1) / (bx * by), n / 256, 65535LL});
  const long long chunk = (n + splits - 1) / splits;
  const dim3 grid(static_cast<unsigned>(bx), static_cast<unsigned>(by), static_cast<unsigned>(splits)), block(32, 8);
  if (splits == 1) {
    reduce_inner_kernel<T, TO><<<grid, block, 0, s>>>(op, x, outer, n, inner, chunk, y, nullptr, accumulate);
    MOE_KERNEL_CHECK();
    return;
  }
  Tensor ws = Tensor::empty(Shape{splits, outer * inner}, DType::f32, device);
  float* pw = static_cast<float*>(ws.raw());
  reduce_inner_kernel<T, TO><<<grid, block, 0, s>>>(op, x, outer, n, inner, chunk, y, pw, accumulate);
  MOE_KERNEL_CHECK();
  const float scale = op == ReduceOp::mean ? 1.f / float(n) : 1.f;
  reduce_splits_kernel<TO>
      <<<grid_for(outer * inner), 256, 0, s>>>(pw, static_cast<int>(splits), outer * inner, scale, y, accumulate);
  MOE_KERNEL_CHECK();
}

}  // namespace

void reduce_forward(ReduceOp op, const Tensor& x, int axis, Tensor& out) {
  const Shape& sh = x.shape();
  MOE_FLOAT_SWITCH(x.dtype(), reduce_op_name(op), T, {
    launch_reduce<T, T>(op, static_cast<const T*>(x.raw()), sh.outer(axis), sh[axis], sh.inner(axis),
                        static_cast<T*>(out.raw()), false, x.device());
  });
}

void reduce_backward(ReduceOp op, const Tensor& x, int axis, const Tensor& out, const Tensor& dout, Tensor& dx) {
  const Shape& sh = x.shape();
  const long long outer = sh.outer(axis), n = sh[axis], inner = sh.inner(axis);
  cudaStream_t s = stream(x.device());
  MOE_FLOAT_SWITCH(x.dtype(), reduce_op_name(op), T, {
    const T* px = static_cast<const T*>(x.raw());
    const T* py = static_cast<const T*>(out.raw());
    const T* pg = static_cast<const T*>(dout.raw());
    T* pdx = static_cast<T*>(dx.raw());
    if (op == ReduceOp::max) {
      max_backward_kernel<T><<<grid_for(outer * inner), 256, 0, s>>>(px, py, pg, n, inner, outer * inner, pdx);
      MOE_KERNEL_CHECK();
    } else {
      Tensor stat;
      if (op == ReduceOp::var || op == ReduceOp::logsumexp) {
        stat = Tensor::empty(Shape{outer * inner}, DType::f32, x.device());
        launch_reduce<T, float>(op == ReduceOp::var ? ReduceOp::mean : ReduceOp::logsumexp, px, outer, n, inner,
                                static_cast<float*>(stat.raw()), false, x.device());
      }
      const float* ps = stat.defined() ? static_cast<const float*>(stat.raw()) : nullptr;
      reduce_backward_kernel<T><<<grid_for(x.numel()), 256, 0, s>>>(op, px, pg, ps, n, inner, x.numel(), pdx);
      MOE_KERNEL_CHECK();
    }
  });
}

void sum_to_shape(const Tensor& x, const Shape& shape, Tensor& out) {
  // Collapse to alternating kept / summed groups (`shape` plays the broadcast operand).
  const std::vector<BroadcastGroup> groups = collapse_broadcast(shape, x.shape(), x.shape());
  std::vector<int64_t> xc, sc;
  int last = -1, count = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    xc.push_back(groups[g].size);
    sc.push_back(groups[g].a_bcast ? 1 : groups[g].size);
    if (groups[g].a_bcast) last = static_cast<int>(g), ++count;
  }
  if (count == 0) {  // nothing to sum: out += x
    MOE_FLOAT_SWITCH(x.dtype(), "sum_to_shape", T, {
      launch_reduce<T, T>(ReduceOp::sum, static_cast<const T*>(x.raw()), x.numel(), 1, 1, static_cast<T*>(out.raw()),
                          true, x.device());
    });
    return;
  }
  const Shape xs(xc);
  if (count == 1) {
    MOE_FLOAT_SWITCH(x.dtype(), "sum_to_shape", T, {
      launch_reduce<T, T>(ReduceOp::sum, static_cast<const T*>(x.raw()), xs.outer(last), xs[last], xs.inner(last),
                          static_cast<T*>(out.raw()), true, x.device());
    });
    return;
  }
  // Several summed groups: sum the last one into a temporary, then recurse on the rest.
  Tensor tmp = Tensor::empty(xs.with(last, 1), x.dtype(), x.device());
  Tensor xv = x.view(xs);
  ::moe::cuda::reduce_forward(ReduceOp::sum, xv, last, tmp);
  Tensor ov = out.view(Shape(sc));
  ::moe::cuda::sum_to_shape(tmp, Shape(sc), ov);
}

}  // namespace moe::cuda
