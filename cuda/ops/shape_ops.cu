// CUDA kernels of strided_copy and transpose (see lib/ops/shape_ops.h). Plain copies move the
// widest unit (up to 16 bytes) the layout allows, for any dtype; accumulation (+=) runs in f32 over
// f32/bf16/f16 storage. Transpose collapses the permutation first; swapping the two innermost
// groups uses 32x32 shared-memory tiles (coalesced reads and writes), and a permutation that keeps
// the last axis (e.g. [B,T,H,D] <-> [B,H,T,D]) moves whole 16-byte vectors of the last axis.
// Covered by tests/gpu/shape_ops_parity_test.cpp.
#include "common/context.h"
#include "common/cuda_check.h"
#include "copy_units.cuh"
#include "ops/shape_ops.h"

namespace moe::cuda {
namespace {

template <class U, bool Acc>
__global__ void copy2d_kernel(const U* __restrict__ s, U* __restrict__ d, long long rows, long long len, long long ss,
                              long long ds) {
  const long long n = rows * len;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / len, c = i - r * len;
    put<Acc>(d + r * ds + c, s[r * ss + c]);
  }
}

struct PermArgs {
  int n;
  long long out_dims[Shape::kMaxDims];
  long long src_stride[Shape::kMaxDims];  // input stride of output axis k
};

template <class U, bool Acc>
__global__ void permute_kernel(const U* __restrict__ x, U* __restrict__ y, long long total, PermArgs a) {
  for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < total;
       o += (long long)gridDim.x * blockDim.x) {
    long long rest = o, src = 0;
    for (int k = a.n - 1; k >= 0; --k) {
      const long long q = rest / a.out_dims[k];
      src += (rest - q * a.out_dims[k]) * a.src_stride[k];
      rest = q;
    }
    put<Acc>(y + o, x[src]);
  }
}

constexpr int kTile = 32, kRowsPerPass = 8;

/// y[b, c, r] = x[b, r, c] for x of shape [batch, R, C]; block (32, 8), grid (ceil(C/32), ceil(R/32), <=65535).
template <class U, bool Acc>
__global__ void tile_transpose_kernel(const U* __restrict__ x, U* __restrict__ y, long long batch, long long R,
                                      long long C) {
  __shared__ U tile[kTile][kTile + 1];
  const long long c0 = (long long)blockIdx.x * kTile, r0 = (long long)blockIdx.y * kTile;
  for (long long b = blockIdx.z; b < batch; b += gridDim.z) {
    const U* xb = x + b * R * C;
    U* yb = y + b * R * C;
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
      const long long r = r0 + i, c = c0 + threadIdx.x;
      if (r < R && c < C) tile[i][threadIdx.x] = xb[r * C + c];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
      const long long c = c0 + i, r = r0 + threadIdx.x;
      if (r < R && c < C) put<Acc>(yb + c * R + r, tile[threadIdx.x][i]);
    }
    __syncthreads();
  }
}

/// Launches the transpose of collapsed dims `d` by `p` with element (or vector) type U.
template <class U, bool Acc>
void launch_transpose(const void* xp, void* yp, const std::vector<int64_t>& d, const std::vector<int>& p,
                      cudaStream_t st) {
  const U* x = static_cast<const U*>(xp);
  U* y = static_cast<U*>(yp);
  const int n = static_cast<int>(d.size());
  long long total = 1;
  for (int64_t v : d) total *= v;
  bool inner_swap = n >= 2 && p[n - 1] == n - 2 && p[n - 2] == n - 1;
  for (int k = 0; k + 2 < n; ++k) inner_swap = inner_swap && p[k] == k;
  if (inner_swap) inner_swap = (d[n - 2] + kTile - 1) / kTile <= 65535;  // grid.y limit; else general path
  if (n == 1) {
    copy2d_kernel<U, Acc><<<grid_for(total), 256, 0, st>>>(x, y, 1, total, total, total);
  } else if (inner_swap) {
    // Units wider than the element only move a last axis that stays last (never an inner swap), and
    // elements have at most 8 bytes: no 16-byte tile kernel is instantiated.
    if constexpr (sizeof(U) <= 8) {
      const long long R = d[n - 2], C = d[n - 1], batch = total / (R * C);
      const dim3 grid(static_cast<unsigned>((C + kTile - 1) / kTile), static_cast<unsigned>((R + kTile - 1) / kTile),
                      static_cast<unsigned>(batch < 65535 ? batch : 65535));
      tile_transpose_kernel<U, Acc><<<grid, dim3(kTile, kRowsPerPass), 0, st>>>(x, y, batch, R, C);
    } else {
      MOE_FAIL("transpose: an inner swap of ", sizeof(U), "-byte units (the widest element is 8 bytes)");
    }
  } else {
    PermArgs a{};
    a.n = n;
    std::vector<long long> in_stride(d.size());
    long long s = 1;
    for (int k = n - 1; k >= 0; --k) {
      in_stride[k] = s;
      s *= d[k];
    }
    for (int k = 0; k < n; ++k) {
      a.out_dims[k] = d[p[k]];
      a.src_stride[k] = in_stride[p[k]];
    }
    permute_kernel<U, Acc><<<grid_for(total), 256, 0, st>>>(x, y, total, a);
  }
  MOE_KERNEL_CHECK();
}

}  // namespace

void strided_copy(const Tensor& src, Tensor& dst, int64_t rows, int64_t len, int64_t src_stride, int64_t dst_stride,
                  int64_t src_offset, int64_t dst_offset, bool accumulate) {
  cudaStream_t st = stream(src.device());
  const long long es = static_cast<long long>(dtype_size(src.dtype()));
  const char* s = static_cast<const char*>(src.raw()) + src_offset * es;
  char* d = static_cast<char*>(dst.raw()) + dst_offset * es;
  if (accumulate) {
    MOE_FLOAT_SWITCH(src.dtype(), "strided_copy (accumulate)", T, {
      copy2d_kernel<T, true><<<grid_for(rows * len), 256, 0, st>>>(
          reinterpret_cast<const T*>(s), reinterpret_cast<T*>(d), rows, len, src_stride, dst_stride);
    });
  } else {
    const int unit = pick_unit({len * es, src_stride * es, dst_stride * es}, {s, d});
    const long long k = es;  // bytes per element
    with_unit(unit, [&](auto tag) {
      using U = decltype(tag);
      const long long u = static_cast<long long>(sizeof(U));
      copy2d_kernel<U, false><<<grid_for(rows * len * k / u), 256, 0, st>>>(reinterpret_cast<const U*>(s),
                                                                            reinterpret_cast<U*>(d), rows, len * k / u,
                                                                            src_stride * k / u, dst_stride * k / u);
    });
  }
  MOE_KERNEL_CHECK();
}

void transpose(const Tensor& x, Tensor& y, const std::vector<int>& perm, bool accumulate) {
  std::vector<int64_t> d;
  std::vector<int> p;
  collapse_perm(x.shape(), perm, d, p);
  cudaStream_t st = stream(x.device());
  if (accumulate) {
    MOE_FLOAT_SWITCH(x.dtype(), "transpose (accumulate)", T,
                     { launch_transpose<T, true>(x.raw(), y.raw(), d, p, st); });
    return;
  }
  const long long es = static_cast<long long>(dtype_size(x.dtype()));
  const int n = static_cast<int>(d.size());
  // When the last (collapsed) axis stays last, move it in the widest vectors it allows.
  const int unit = p[n - 1] == n - 1 ? pick_unit({d[n - 1] * es}, {x.raw(), y.raw()}) : static_cast<int>(es);
  d[n - 1] = d[n - 1] * es / unit;
  with_unit(unit, [&](auto tag) { launch_transpose<decltype(tag), false>(x.raw(), y.raw(), d, p, st); });
}

}  // namespace moe::cuda
