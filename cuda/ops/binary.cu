// CUDA kernels of the broadcasting binary ops (math shared with the CPU in lib/ops/binary_math.h).
// Operand shapes are collapsed (binary_math.h) into at most two groups [R, D] whenever possible:
// same shape (R = 1), bias add ([R,D] + [D]), column broadcast ([R,D] * [R,1]), scalars. Those run
// a 2-D strided kernel with 16-byte vector loads/stores (4 f32 or 8 bf16/f16 per thread) when the
// pointers are aligned; everything else (up to 8 dims) runs a general index-mapping kernel.
// Backward writes dout * d op/dX straight into dX when X has the output shape, else into a
// temporary that sum_to_shape (cuda/ops/reduce.cu) adds into dX. f32 math. Tests: tests/gpu/binary_parity_test.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/binary.h"
#include "ops/binary_math.h"
#include "ops/reduce.h"

namespace moe::cuda {
namespace {

enum class Mode { forward, grad_a, grad_b };

/// An operand in the [R, D] view: element (r, c) is at r * rs + c * cs (cs is 0 or 1).
struct Operand2d {
  long long rs;
  int cs;
};

template <class T, int N>
struct alignas(16) Pack {
  T v[N];
};

/// forward: op(a, b); grad: prev + g * d op / d(a or b).
template <Mode M>
__device__ __forceinline__ float combine(BinaryOp op, float a, float b, float g, float prev) {
  if constexpr (M == Mode::forward)
    return binary_value<float>(op, a, b);
  else
    return prev + g * binary_partial<float>(op, a, b, M == Mode::grad_b);
}

template <class T, Mode M>
__global__ void binary2d_kernel(BinaryOp op, const T* a, Operand2d oa, const T* b, Operand2d ob, const T* g, T* y,
                                long long rows, long long cols, long long ld, bool accumulate) {
  const long long total = rows * cols;
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    const long long r = t / cols, c = t - r * cols, i = r * ld + c;
    const float av = to_float(a[r * oa.rs + c * oa.cs]), bv = to_float(b[r * ob.rs + c * ob.cs]);
    float gv = 0.f, prev = 0.f;
    if constexpr (M != Mode::forward) {
      gv = to_float(g[i]);
      if (accumulate) prev = to_float(y[i]);
    }
    y[i] = from_float<T>(combine<M>(op, av, bv, gv, prev));
  }
}

template <class T, int N>
__device__ __forceinline__ void load_operand(const T* p, const Operand2d& o, long long r, long long c, float (&v)[N]) {
  if (o.cs == 0) {
    const float s = to_float(p[r * o.rs]);
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = s;
  } else {
    const Pack<T, N> pk = *reinterpret_cast<const Pack<T, N>*>(p + r * o.rs + c);
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = to_float(pk.v[k]);
  }
}

/// Same as binary2d_kernel with N consecutive columns per thread; cols % N == 0 and every
/// column-contiguous pointer is 16-byte aligned (checked on the host).
template <class T, Mode M, int N>
__global__ void binary2d_vec_kernel(BinaryOp op, const T* a, Operand2d oa, const T* b, Operand2d ob, const T* g, T* y,
                                    long long rows, long long cols, long long ld, bool accumulate) {
  const long long units = cols / N, total = rows * units;
  const Operand2d full{ld, 1};
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    const long long r = t / units, c = (t - r * units) * N;
    float av[N], bv[N], gv[N], pv[N];
    load_operand<T, N>(a, oa, r, c, av);
    load_operand<T, N>(b, ob, r, c, bv);
#pragma unroll
    for (int k = 0; k < N; ++k) gv[k] = pv[k] = 0.f;
    if constexpr (M != Mode::forward) {
      load_operand<T, N>(g, full, r, c, gv);
      if (accumulate) load_operand<T, N>(y, full, r, c, pv);
    }
    Pack<T, N> out;
#pragma unroll
    for (int k = 0; k < N; ++k) out.v[k] = from_float<T>(combine<M>(op, av[k], bv[k], gv[k], pv[k]));
    *reinterpret_cast<Pack<T, N>*>(y + r * ld + c) = out;
  }
}

template <class T, Mode M>
__global__ void binary_general_kernel(BinaryOp op, const T* a, const T* b, const T* g, T* y, BroadcastIndex ix,
                                      long long n, bool accumulate) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    int64_t ia, ib;
    ix.map(i, ia, ib);
    float gv = 0.f, prev = 0.f;
    if constexpr (M != Mode::forward) {
      gv = to_float(g[i]);
      if (accumulate) prev = to_float(y[i]);
    }
    y[i] = from_float<T>(combine<M>(op, to_float(a[ia]), to_float(b[ib]), gv, prev));
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// Computes y (the output shape) from a, b (and g in grad modes) on the fast or general path.
template <class T, Mode M>
void launch(BinaryOp op, const Tensor& a, const Tensor& b, const T* g, T* y, const Shape& out_shape, bool accumulate,
            cudaStream_t s) {
  const long long n = out_shape.numel();
  if (n == 0) return;
  const T* pa = static_cast<const T*>(a.raw());
  const T* pb = static_cast<const T*>(b.raw());
  const std::vector<BroadcastGroup> groups = collapse_broadcast(a.shape(), b.shape(), out_shape);
  if (groups.size() > 2) {
    binary_general_kernel<T, M>
        <<<grid_for(n), 256, 0, s>>>(op, pa, pb, g, y, make_broadcast_index(groups), n, accumulate);
    MOE_KERNEL_CHECK();
    return;
  }
  long long rows = 1, cols = 1;
  Operand2d oa{0, 1}, ob{0, 1};
  if (groups.size() == 1) {
    cols = groups[0].size;
    oa.cs = groups[0].a_bcast ? 0 : 1;
    ob.cs = groups[0].b_bcast ? 0 : 1;
  } else if (groups.size() == 2) {
    rows = groups[0].size;
    cols = groups[1].size;
    oa = {groups[0].a_bcast ? 0 : (groups[1].a_bcast ? 1 : cols), groups[1].a_bcast ? 0 : 1};
    ob = {groups[0].b_bcast ? 0 : (groups[1].b_bcast ? 1 : cols), groups[1].b_bcast ? 0 : 1};
  }
  constexpr int N = 16 / sizeof(T);
  const bool vec_ok = (rows == 1 || cols % N == 0) && cols >= N && aligned16(y) &&
                      (M == Mode::forward || aligned16(g)) && (oa.cs == 0 || aligned16(pa)) &&
                      (ob.cs == 0 || aligned16(pb));
  const long long vec_cols = vec_ok ? cols / N * N : 0;  // rows > 1 implies vec_cols == cols
  if (vec_cols > 0) {
    binary2d_vec_kernel<T, M, N>
        <<<grid_for(rows * (vec_cols / N)), 256, 0, s>>>(op, pa, oa, pb, ob, g, y, rows, vec_cols, cols, accumulate);
    MOE_KERNEL_CHECK();
  }
  if (vec_cols < cols) {  // the scalar tail of a single row, or everything
    const long long c0 = vec_cols;
    binary2d_kernel<T, M><<<grid_for(rows * (cols - c0)), 256, 0, s>>>(
        op, pa + c0 * oa.cs, oa, pb + c0 * ob.cs, ob, g ? g + c0 : nullptr, y + c0, rows, cols - c0, cols, accumulate);
    MOE_KERNEL_CHECK();
  }
}

}  // namespace

void binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  MOE_FLOAT_SWITCH(a.dtype(), binary_op_name(op), T, {
    launch<T, Mode::forward>(op, a, b, nullptr, static_cast<T*>(out.raw()), out.shape(), false, stream(a.device()));
  });
}

void binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dout, Tensor* da, Tensor* db) {
  cudaStream_t s = stream(a.device());
  MOE_FLOAT_SWITCH(a.dtype(), binary_op_name(op), T, {
    const T* g = static_cast<const T*>(dout.raw());
    for (int side = 0; side < 2; ++side) {  // sequential launches: da and db may be one tensor
      Tensor* dx = side == 0 ? da : db;
      if (!dx) continue;
      if (dx->shape() == dout.shape()) {
        if (side == 0)
          launch<T, Mode::grad_a>(op, a, b, g, static_cast<T*>(dx->raw()), dout.shape(), true, s);
        else
          launch<T, Mode::grad_b>(op, a, b, g, static_cast<T*>(dx->raw()), dout.shape(), true, s);
      } else if (op == BinaryOp::add || (op == BinaryOp::sub && side == 0)) {
        ::moe::cuda::sum_to_shape(dout, dx->shape(), *dx);
      } else {
        Tensor tmp = Tensor::empty(dout.shape(), dout.dtype(), dout.device());
        if (side == 0)
          launch<T, Mode::grad_a>(op, a, b, g, static_cast<T*>(tmp.raw()), dout.shape(), false, s);
        else
          launch<T, Mode::grad_b>(op, a, b, g, static_cast<T*>(tmp.raw()), dout.shape(), false, s);
        ::moe::cuda::sum_to_shape(tmp, dx->shape(), *dx);
      }
    }
  });
}

}  // namespace moe::cuda
