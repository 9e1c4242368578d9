// CUDA kernels of index_select / index_add / gather_last / scatter_add_last (lib/ops/gather_scatter.h).
// index_select copies rows in the widest unit (up to 16 bytes) the row length and pointers allow;
// index_add is the deterministic sorted row scatter of row_scatter.h (no atomics); the last-axis
// scatter uses f32 atomics. Bad indices are zero-filled or skipped and recorded in the device
// flag (ops/index_errors.h).
// Covered by tests/gpu/gather_scatter_parity_test.cpp.
#include "atomic_add.cuh"
#include "common/context.h"
#include "common/cuda_check.h"
#include "copy_units.cuh"
#include "index_errors.cuh"
#include "ops/gather_scatter.h"
#include "row_scatter.h"

namespace moe::cuda {
namespace {

#define MOE_GRID_STRIDE(i, n) \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

template <class U, bool Acc>
__global__ void index_select_kernel(const U* __restrict__ x, const int* __restrict__ idx, U* __restrict__ out,
                                    long long M, long long N, long long R, unsigned long long* flag) {
  MOE_GRID_STRIDE(i, M * R) {
    const long long m = i / R, c = i - m * R;
    const long long id = idx[m];
    if (id < 0 || id >= N) {
      if (c == 0) record_bad_index(flag, IndexOp::index_select, id, N);
      if constexpr (!Acc) out[i] = U{};
      continue;
    }
    put<Acc>(out + i, x[id * R + c]);
  }
}

template <class T, bool Acc>
__global__ void gather_last_kernel(const T* __restrict__ x, const int* __restrict__ idx, T* __restrict__ out,
                                   long long n, long long V, long long k, unsigned long long* flag) {
  MOE_GRID_STRIDE(i, n) {
    const long long r = i / k, id = idx[i];
    if (id < 0 || id >= V) {
      record_bad_index(flag, IndexOp::gather_last, id, V);
      if constexpr (!Acc) out[i] = from_float<T>(0.f);
      continue;
    }
    put<Acc>(out + i, x[r * V + id]);
  }
}

template <class T>
__global__ void scatter_add_last_kernel(T* dst, const int* __restrict__ idx, const T* __restrict__ src, long long n,
                                        long long V, long long k, unsigned long long* flag) {
  MOE_GRID_STRIDE(i, n) {
    const long long r = i / k, id = idx[i];
    if (id < 0 || id >= V) {
      record_bad_index(flag, IndexOp::scatter_add_last, id, V);
      continue;
    }
    atomic_add(dst + r * V + id, to_float(src[i]));
  }
}

}  // namespace

void index_select(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate) {
  const int dev = x.device().index;
  unsigned long long* flag = index_error_flag(dev);
  cudaStream_t st = stream(dev);
  const long long M = idx.numel(), N = x.shape()[0], R = x.shape().inner(0);
  const int* id = static_cast<const int*>(idx.raw());
  if (accumulate) {
    MOE_FLOAT_SWITCH(x.dtype(), "index_select (accumulate)", T, {
      index_select_kernel<T, true><<<grid_for(M * R), 256, 0, st>>>(static_cast<const T*>(x.raw()), id,
                                                                    static_cast<T*>(out.raw()), M, N, R, flag);
    });
  } else {
    const long long es = static_cast<long long>(dtype_size(x.dtype()));
    with_unit(pick_unit({R * es}, {x.raw(), out.raw()}), [&](auto tag) {
      using U = decltype(tag);
      const long long Ru = R * es / static_cast<long long>(sizeof(U));
      index_select_kernel<U, false><<<grid_for(M * Ru), 256, 0, st>>>(static_cast<const U*>(x.raw()), id,
                                                                      static_cast<U*>(out.raw()), M, N, Ru, flag);
    });
  }
  MOE_KERNEL_CHECK();
  after_index_launch(dev);
}

void index_add(Tensor& dst, const Tensor& idx, const Tensor& src) {
  sorted_row_add(idx, src, dst, 1.f, IndexOp::index_add);
}

void gather_last(const Tensor& x, const Tensor& idx, Tensor& out, bool accumulate) {
  const int dev = x.device().index;
  unsigned long long* flag = index_error_flag(dev);
  const long long n = idx.numel(), V = x.shape().last(), k = idx.shape().last();
  const int* id = static_cast<const int*>(idx.raw());
  MOE_FLOAT_SWITCH(x.dtype(), "gather_last", T, {
    if (accumulate)
      gather_last_kernel<T, true><<<grid_for(n), 256, 0, stream(dev)>>>(static_cast<const T*>(x.raw()), id,
                                                                        static_cast<T*>(out.raw()), n, V, k, flag);
    else
      gather_last_kernel<T, false><<<grid_for(n), 256, 0, stream(dev)>>>(static_cast<const T*>(x.raw()), id,
                                                                         static_cast<T*>(out.raw()), n, V, k, flag);
  });
  MOE_KERNEL_CHECK();
  after_index_launch(dev);
}

void scatter_add_last(Tensor& dst, const Tensor& idx, const Tensor& src) {
  const int dev = dst.device().index;
  unsigned long long* flag = index_error_flag(dev);
  const long long n = idx.numel(), V = dst.shape().last(), k = idx.shape().last();
  MOE_FLOAT_SWITCH(dst.dtype(), "scatter_add_last", T, {
    scatter_add_last_kernel<T><<<grid_for(n), 256, 0, stream(dev)>>>(static_cast<T*>(dst.raw()),
                                                                     static_cast<const int*>(idx.raw()),
                                                                     static_cast<const T*>(src.raw()), n, V, k, flag);
  });
  MOE_KERNEL_CHECK();
  after_index_launch(dev);
}

}  // namespace moe::cuda
