// CUDA kernels of the fused LSTM cell (math shared with the CPU in lib/ops/lstm_cell_math.h).
// One thread per (row, unit): it reads that unit's gate pre-activations from the four slices of the
// gate row (each slice read by consecutive threads, so loads coalesce), computes in f32 and writes
// c or h (forward) or adds into the gate and state gradients (backward; every element has exactly
// one writer, so no atomics). f32, bf16 and f16 storage; grid-stride loops.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/context.h"
#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/lstm_cell.h"
#include "ops/lstm_cell_math.h"

namespace moe::cuda {
namespace {
template <class T>
__global__ void lstm_state_forward_kernel(const T* __restrict__ gates, const T* __restrict__ c_prev, T* __restrict__ c,
                                          long long n, long long H) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n; k += (long long)gridDim.x * blockDim.x) {
    const long long b = k / H, j = k - b * H;
    const T* row = gates + b * 4 * H;
    const float cp = c_prev ? to_float(c_prev[k]) : 0.f;
    c[k] = from_float<T>(lstm_state<float>(to_float(row[j]), to_float(row[H + j]), to_float(row[3 * H + j]), cp));
  }
}

template <class T>
__global__ void lstm_state_backward_kernel(const T* __restrict__ gates, const T* __restrict__ c_prev,
                                           const T* __restrict__ dc, T* __restrict__ dgates, T* __restrict__ dc_prev,
                                           long long n, long long H) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n; k += (long long)gridDim.x * blockDim.x) {
    const long long b = k / H, j = k - b * H;
    const T* row = gates + b * 4 * H;
    const float cp = c_prev ? to_float(c_prev[k]) : 0.f;
    float di, df, dg, dp;
    lstm_state_grad<float>(to_float(row[j]), to_float(row[H + j]), to_float(row[3 * H + j]), cp, to_float(dc[k]), &di,
                           &df, &dg, &dp);
    if (dgates) {
      T* drow = dgates + b * 4 * H;
      drow[j] = from_float<T>(to_float(drow[j]) + di);
      drow[H + j] = from_float<T>(to_float(drow[H + j]) + df);
      drow[3 * H + j] = from_float<T>(to_float(drow[3 * H + j]) + dg);
    }
    if (dc_prev) dc_prev[k] = from_float<T>(to_float(dc_prev[k]) + dp);
  }
}

template <class T>
__global__ void lstm_output_forward_kernel(const T* __restrict__ gates, const T* __restrict__ c, T* __restrict__ h,
                                           long long n, long long H) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n; k += (long long)gridDim.x * blockDim.x) {
    const long long b = k / H, j = k - b * H;
    h[k] = from_float<T>(lstm_output<float>(to_float(gates[b * 4 * H + 2 * H + j]), to_float(c[k])));
  }
}

template <class T>
__global__ void lstm_output_backward_kernel(const T* __restrict__ gates, const T* __restrict__ c,
                                            const T* __restrict__ dh, T* __restrict__ dgates, T* __restrict__ dc,
                                            long long n, long long H) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n; k += (long long)gridDim.x * blockDim.x) {
    const long long b = k / H, j = k - b * H;
    float dgo, dcc;
    lstm_output_grad<float>(to_float(gates[b * 4 * H + 2 * H + j]), to_float(c[k]), to_float(dh[k]), &dgo, &dcc);
    if (dgates) {
      T* d = dgates + b * 4 * H + 2 * H + j;
      *d = from_float<T>(to_float(*d) + dgo);
    }
    if (dc) dc[k] = from_float<T>(to_float(dc[k]) + dcc);
  }
}

template <class T>
const T* in_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.raw()) : nullptr;
}
template <class T>
T* out_or_null(Tensor& t) {
  return t.defined() ? static_cast<T*>(t.raw()) : nullptr;
}
}  // namespace

void lstm_cell_state_forward(const Tensor& gates, const Tensor& c_prev, Tensor& c) {
  const long long n = c.numel(), H = c.shape()[1];
  if (n == 0) return;
  MOE_FLOAT_SWITCH(gates.dtype(), "lstm_cell_state", T, {
    lstm_state_forward_kernel<T><<<grid_for(n), 256, 0, stream(gates.device())>>>(
        static_cast<const T*>(gates.raw()), in_or_null<T>(c_prev), static_cast<T*>(c.raw()), n, H);
  });
  MOE_KERNEL_CHECK();
}

void lstm_cell_state_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& dc, Tensor& dgates,
                              Tensor& dc_prev) {
  const long long n = dc.numel(), H = dc.shape()[1];
  if (n == 0 || (!dgates.defined() && !dc_prev.defined())) return;
  MOE_FLOAT_SWITCH(gates.dtype(), "lstm_cell_state backward", T, {
    lstm_state_backward_kernel<T><<<grid_for(n), 256, 0, stream(gates.device())>>>(
        static_cast<const T*>(gates.raw()), in_or_null<T>(c_prev), static_cast<const T*>(dc.raw()),
        out_or_null<T>(dgates), out_or_null<T>(dc_prev), n, H);
  });
  MOE_KERNEL_CHECK();
}

void lstm_cell_output_forward(const Tensor& gates, const Tensor& c, Tensor& h) {
  const long long n = c.numel(), H = c.shape()[1];
  if (n == 0) return;
  MOE_FLOAT_SWITCH(gates.dtype(), "lstm_cell_output", T, {
    lstm_output_forward_kernel<T><<<grid_for(n), 256, 0, stream(gates.device())>>>(
        static_cast<const T*>(gates.raw()), static_cast<const T*>(c.raw()), static_cast<T*>(h.raw()), n, H);
  });
  MOE_KERNEL_CHECK();
}

void lstm_cell_output_backward(const Tensor& gates, const Tensor& c, const Tensor& dh, Tensor& dgates, Tensor& dc) {
  const long long n = c.numel(), H = c.shape()[1];
  if (n == 0 || (!dgates.defined() && !dc.defined())) return;
  MOE_FLOAT_SWITCH(gates.dtype(), "lstm_cell_output backward", T, {
    lstm_output_backward_kernel<T><<<grid_for(n), 256, 0, stream(gates.device())>>>(
        static_cast<const T*>(gates.raw()), static_cast<const T*>(c.raw()), static_cast<const T*>(dh.raw()),
        out_or_null<T>(dgates), out_or_null<T>(dc), n, H);
  });
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
