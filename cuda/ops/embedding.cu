// CUDA embedding lookup and backward (lib/ops/embedding.h). Forward: table T1 -> output T2 (any
// of f32 / bf16 / f16), f32 math, four elements per thread with packed loads and stores when D is
// a multiple of 4 (16-byte loads of an f32 table). Backward is deterministic: cub radix-sorts the
// (id, position) pairs, then one thread per (run of equal ids, column) sums its run in order
// (coalesced row reads, no atomics). Bad ids are zero-filled / skipped and recorded
// (ops/index_errors.h).
// Covered by tests/gpu/embedding_parity_test.cpp.
#include <cub/device/device_radix_sort.cuh>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "index_errors.cuh"
#include "ops/embedding.h"
#include "row_scatter.h"

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

__global__ void iota_kernel(int* p, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = static_cast<int>(i);
}

/// keys: the ids sorted; pos: where each came from. The thread for (first position of a run of
/// equal ids, column c) sums that run in order and adds it to dtable[id, c]: no atomics, the same
/// result on every run, one rounding per element even for a bf16 table.
template <class TT, class TO>
__global__ void embedding_backward_sorted_kernel(const int* __restrict__ keys, const int* __restrict__ pos,
                                                 const TO* __restrict__ dout, TT* dtable, long long n, long long V,
                                                 long long D, float scale, IndexOp op, unsigned long long* flag) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n * D;
       i += (long long)gridDim.x * blockDim.x) {
    const long long s = i / D, c = i - s * D;
    const int key = keys[s];
    if (s > 0 && keys[s - 1] == key) continue;  // not the start of a run
    if (key < 0 || key >= V) {
      if (c == 0) record_bad_index(flag, op, key, V);
      continue;
    }
    float acc = 0.f;
    for (long long j = s; j < n && keys[j] == key; ++j) acc += to_float(dout[pos[j] * D + c]);
    TT* dst = dtable + key * D + c;
    *dst = from_float<TT>(to_float(*dst) + scale * acc);
  }
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& out, float scale) {
  const int dev = table.device().index;
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

void sorted_row_add(const Tensor& ids, const Tensor& dout, Tensor& dtable, float scale, IndexOp op) {
  const Device device = dtable.device();
  const int dev = device.index;
  unsigned long long* flag = index_error_flag(dev);
  const long long n = ids.numel(), V = dtable.shape()[0], D = dtable.shape().inner(0);
  MOE_CHECK(n < (1LL << 31), index_op_name(op), ": ", n, " indices exceed the sort's 32-bit positions");
  cudaStream_t st = stream(dev);
  // Sort (id, position) pairs so that equal ids form runs (deterministic accumulation).
  Tensor keys = Tensor::empty(Shape{n}, DType::i32, device), pos_in = Tensor::empty(Shape{n}, DType::i32, device),
         pos = Tensor::empty(Shape{n}, DType::i32, device);
  iota_kernel<<<grid_for(n), 256, 0, st>>>(static_cast<int*>(pos_in.raw()), n);
  MOE_KERNEL_CHECK();
  const int* id = static_cast<const int*>(ids.raw());
  int *k = static_cast<int*>(keys.raw()), *pi = static_cast<int*>(pos_in.raw()), *po = static_cast<int*>(pos.raw());
  size_t bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, id, k, pi, po, static_cast<int>(n), 0, 32, st));
  Tensor temp = Tensor::empty(Shape{static_cast<int64_t>(bytes > 0 ? bytes : 1)}, DType::u8, device);
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.raw(), bytes, id, k, pi, po, static_cast<int>(n), 0, 32, st));
  MOE_FLOAT_SWITCH(dtable.dtype(), index_op_name(op), TT, {
    MOE_FLOAT_SWITCH(dout.dtype(), index_op_name(op), TO, {
      embedding_backward_sorted_kernel<TT, TO><<<grid_for(n * D), 256, 0, st>>>(
          k, po, static_cast<const TO*>(dout.raw()), static_cast<TT*>(dtable.raw()), n, V, D, scale, op, flag);
    });
  });
  MOE_KERNEL_CHECK();
  after_index_launch(dev);
}

void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable, float scale) {
  sorted_row_add(ids, dout, dtable, scale, IndexOp::embedding);
}

}  // namespace moe::cuda
