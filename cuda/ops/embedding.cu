// CUDA embedding lookup and backward (lib/ops/embedding.h). Forward: table T1 -> output T2 (any
// of f32 / bf16 / f16), f32 math, four elements per thread with packed loads and stores when D is
// a multiple of 4 (16-byte loads of an f32 table). Backward: f32 atomics into dtable (float4
// vector atomics on sm_90 for an f32 table), so repeated ids add up in a varying order. Bad ids
// are zero-filled / skipped and recorded (ops/index_errors.h).
// Covered by tests/gpu/embedding_parity_test.cpp.
#include <type_traits>

#include "atomic_add.cuh"
#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "index_errors.cuh"
#include "ops/embedding.h"

namespace moe::cuda {
namespace {

template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

/// Each thread moves N consecutive elements of one output row (D % N == 0).
template <class TT, class TO, int N>
__global__ void embedding_forward_kernel(const TT* __restrict__ table, const int* __restrict__ ids,
                                         TO* __restrict__ out, long long n, long long V, long long D, float scale,
                                         unsigned long long* flag) {
  const long long Dn = D / N, total = n * Dn;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long s = i / Dn, c = i - s * Dn;
    const long long id = ids[s];
    Pack<TO, N> o;
    if (id < 0 || id >= V) {
      if (c == 0) record_bad_index(flag, IndexOp::embedding, id, V);
#pragma unroll
      for (int k = 0; k < N; ++k) o.v[k] = from_float<TO>(0.f);
    } else {
      const Pack<TT, N> t = reinterpret_cast<const Pack<TT, N>*>(table + id * D)[c];
#pragma unroll
      for (int k = 0; k < N; ++k) o.v[k] = from_float<TO>(scale * to_float(t.v[k]));
    }
    reinterpret_cast<Pack<TO, N>*>(out + s * D)[c] = o;
  }
}

template <class TT, class TO, int N>
__global__ void embedding_backward_kernel(const int* __restrict__ ids, const TO* __restrict__ dout, TT* dtable,
                                          long long n, long long V, long long D, float scale,
                                          unsigned long long* flag) {
  const long long Dn = D / N, total = n * Dn;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long s = i / Dn, c = i - s * Dn;
    const long long id = ids[s];
    if (id < 0 || id >= V) {
      if (c == 0) record_bad_index(flag, IndexOp::embedding, id, V);
      continue;
    }
    const Pack<TO, N> g = reinterpret_cast<const Pack<TO, N>*>(dout + s * D)[c];
    TT* dst = dtable + id * D + c * N;
    if constexpr (N == 4 && std::is_same_v<TT, float>) {
      atomic_add4(dst, make_float4(scale * to_float(g.v[0]), scale * to_float(g.v[1]), scale * to_float(g.v[2]),
                                   scale * to_float(g.v[3])));
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) atomic_add(dst + k, scale * to_float(g.v[k]));
    }
  }
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out, float scale) {
  const int dev = table.device().index;
  poll_index_errors(dev, false);
  unsigned long long* flag = index_error_flag(dev);
  const long long n = ids.numel(), V = table.shape()[0], D = table.shape()[1];
  const int* id = static_cast<const int*>(ids.raw());
  cudaStream_t st = stream(dev);
  MOE_FLOAT_SWITCH(table.dtype(), "embedding (table)", TT, {
    MOE_FLOAT_SWITCH(out.dtype(), "embedding (output)", TO, {
      const TT* t = static_cast<const TT*>(table.raw());
      TO* o = static_cast<TO*>(out.raw());
      if (D % 4 == 0 && aligned(t, 4 * sizeof(TT)) && aligned(o, 4 * sizeof(TO)))
        embedding_forward_kernel<TT, TO, 4><<<grid_for(n * D / 4), 256, 0, st>>>(t, id, o, n, V, D, scale, flag);
      else
        embedding_forward_kernel<TT, TO, 1><<<grid_for(n * D), 256, 0, st>>>(t, id, o, n, V, D, scale, flag);
    });
  });
  MOE_KERNEL_CHECK();
  after_index_launch(dev);
}

void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable, float scale) {
  const int dev = dtable.device().index;
  poll_index_errors(dev, false);
  unsigned long long* flag = index_error_flag(dev);
  const long long n = ids.numel(), V = dtable.shape()[0], D = dtable.shape()[1];
  const int* id = static_cast<const int*>(ids.raw());
  cudaStream_t st = stream(dev);
  MOE_FLOAT_SWITCH(dtable.dtype(), "embedding backward (table gradient)", TT, {
    MOE_FLOAT_SWITCH(dout.dtype(), "embedding backward (output gradient)", TO, {
      TT* t = static_cast<TT*>(dtable.raw());
      const TO* g = static_cast<const TO*>(dout.raw());
      if (D % 4 == 0 && aligned(t, 4 * sizeof(TT)) && aligned(g, 4 * sizeof(TO)))
        embedding_backward_kernel<TT, TO, 4><<<grid_for(n * D / 4), 256, 0, st>>>(id, g, t, n, V, D, scale, flag);
      else
        embedding_backward_kernel<TT, TO, 1><<<grid_for(n * D), 256, 0, st>>>(id, g, t, n, V, D, scale, flag);
    });
  });
  MOE_KERNEL_CHECK();
  after_index_launch(dev);
}

}  // namespace moe::cuda
