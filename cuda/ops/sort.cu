// CUDA stable counting sort by key (see lib/ops/sort.h) in five stream-ordered launches, no host
// sync: (1) each warp owns a tile of 32*C consecutive keys and counts them per segment with
// __match_any_sync (one atomic per distinct key per 32 keys) into table[segment][tile];
// (2-3) an exclusive scan of the segment-major table gives each (segment, tile) its first output
// slot, and offsets[s] = table[s][0]; (4) each warp walks its tile again in order, a key's slot is
// its (segment, tile) cursor + its rank among equal keys of the same 32 (ballot popcount), so the
// order is stable. Out-of-range keys use an extra last segment. C grows with the number of
// segments so the table stays near N/4 entries. Parity: tests/gpu/sort_parity_test.cpp.
#include <algorithm>

#include "common/context.h"
#include "common/cuda_check.h"
#include "ops/sort.h"

namespace moe::cuda {
namespace {
constexpr int kScanThreads = 512, kScanItems = 8, kScanTile = kScanThreads * kScanItems;

/// Exclusive block scan of one int per thread; `total` gets the block sum. `ws`: 32 shared ints.
__device__ __forceinline__ int block_exclusive_scan(int v, int* ws, int& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  int incl = v;
  for (int o = 1; o < 32; o <<= 1) {
    const int up = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += up;
  }
  __syncthreads();  // ws may still be read by a previous call
  if (lane == 31) ws[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    int s = lane < warps ? ws[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      const int up = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += up;
    }
    ws[lane] = s;
  }
  __syncthreads();
  total = ws[warps - 1];
  return (warp ? ws[warp - 1] : 0) + incl - v;
}

__global__ void scan_reduce_kernel(const int* __restrict__ in, long long m, int* __restrict__ sums) {
  __shared__ int ws[32];
  const long long base = blockIdx.x * (long long)kScanTile + threadIdx.x * (long long)kScanItems;
  int s = 0;
#pragma unroll
  for (int j = 0; j < kScanItems; ++j) s += base + j < m ? in[base + j] : 0;
  int total;
  block_exclusive_scan(s, ws, total);
  if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

/// One block: exclusive scan of the per-tile sums in place.
__global__ void scan_sums_kernel(int* sums, int nb) {
  __shared__ int ws[32];
  int carry = 0;
  for (int b = 0; b < nb; b += blockDim.x) {
    const int i = b + threadIdx.x;
    int total;
    const int ex = block_exclusive_scan(i < nb ? sums[i] : 0, ws, total);
    if (i < nb) sums[i] = carry + ex;
    carry += total;
  }
}

/// Exclusive scan of `data` in place, given the scanned per-tile sums.
__global__ void scan_apply_kernel(int* data, long long m, const int* __restrict__ sums) {
  __shared__ int ws[32];
  const long long base = blockIdx.x * (long long)kScanTile + threadIdx.x * (long long)kScanItems;
  int v[kScanItems], s = 0;
#pragma unroll
  for (int j = 0; j < kScanItems; ++j) {
    v[j] = base + j < m ? data[base + j] : 0;
    s += v[j];
  }
  int total;
  int run = sums[blockIdx.x] + block_exclusive_scan(s, ws, total);
#pragma unroll
  for (int j = 0; j < kScanItems; ++j)
    if (base + j < m) {
      data[base + j] = run;
      run += v[j];
    }
}

__device__ __forceinline__ int bucket(int key, int segments) {
  return static_cast<unsigned>(key) < static_cast<unsigned>(segments) ? key : segments;
}

__global__ void sort_count_kernel(const int* __restrict__ keys, long long n, int segments, long long tiles, int chunks,
                                  int* __restrict__ table) {
  const long long tile = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (tile >= tiles) return;  // whole warps
  for (int c = 0; c < chunks; ++c) {
    const long long i = (tile * chunks + c) * 32 + lane;
    const unsigned mask = __ballot_sync(0xffffffffu, i < n);
    if (!mask) break;
    if (i < n) {
      const int seg = bucket(keys[i], segments);
      const unsigned peers = __match_any_sync(mask, seg);
      if (lane == __ffs(peers) - 1) atomicAdd(&table[seg * tiles + tile], __popc(peers));
    }
  }
}

__global__ void sort_offsets_kernel(const int* __restrict__ table, long long tiles, int segments,
                                    int* __restrict__ offsets) {
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s <= segments; s += gridDim.x * blockDim.x)
    offsets[s] = table[s * tiles];
}

__global__ void sort_scatter_kernel(const int* __restrict__ keys, long long n, int segments, long long tiles,
                                    int chunks, int* table, int* __restrict__ perm) {
  const long long tile = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (tile >= tiles) return;
  const unsigned below = (1u << lane) - 1u;
  for (int c = 0; c < chunks; ++c) {
    const long long i = (tile * chunks + c) * 32 + lane;
    const unsigned mask = __ballot_sync(0xffffffffu, i < n);
    if (!mask) break;
    int* cursor = nullptr;
    int next = 0;
    if (i < n) {
      const int seg = bucket(keys[i], segments);
      const unsigned peers = __match_any_sync(mask, seg);
      cursor = &table[seg * tiles + tile];  // owned by this warp alone
      const int base = *cursor;
      perm[base + __popc(peers & below)] = static_cast<int>(i);
      if (lane == __ffs(peers) - 1)
        next = base + __popc(peers);
      else
        cursor = nullptr;
    }
    __syncwarp();  // every lane has read its cursor
    if (cursor) *cursor = next;
    __syncwarp();  // the new cursors are visible to the next chunk
  }
}

__global__ void inverse_permutation_kernel(const int* __restrict__ perm, int* __restrict__ inv, long long n) {
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x) {
    const int p = perm[j];
    if (p >= 0 && p < n) inv[p] = static_cast<int>(j);
  }
}
}  // namespace

void sort_by_key(const Tensor& keys, int num_segments, Tensor& perm, Tensor& offsets) {
  const long long n = keys.numel();
  cudaStream_t s = stream(keys.device());
  if (n == 0) {
    CUDA_CHECK(cudaMemsetAsync(offsets.raw(), 0, offsets.bytes(), s));
    return;
  }
  const long long buckets = static_cast<long long>(num_segments) + 1;  // + out-of-range keys
  const int chunks = static_cast<int>(std::min<long long>(128, std::max<long long>(4, (buckets + 7) / 8)));
  const long long tiles = (n + 32LL * chunks - 1) / (32LL * chunks);
  const long long m = buckets * tiles;
  MOE_CHECK(m < (1LL << 31), "sort_by_key: ", n, " keys in ", num_segments, " segments need a table too large");
  Tensor table = Tensor::empty(Shape{m}, DType::i32, keys.device());
  const long long nb = (m + kScanTile - 1) / kScanTile;
  Tensor sums = Tensor::empty(Shape{nb}, DType::i32, keys.device());
  int* pt = static_cast<int*>(table.raw());
  int* ps = static_cast<int*>(sums.raw());
  const int* pk = static_cast<const int*>(keys.raw());
  const unsigned warp_blocks = static_cast<unsigned>((tiles + 7) / 8);  // 8 warps per block

  CUDA_CHECK(cudaMemsetAsync(pt, 0, table.bytes(), s));
  sort_count_kernel<<<warp_blocks, 256, 0, s>>>(pk, n, num_segments, tiles, chunks, pt);
  MOE_KERNEL_CHECK();
  scan_reduce_kernel<<<static_cast<unsigned>(nb), kScanThreads, 0, s>>>(pt, m, ps);
  MOE_KERNEL_CHECK();
  scan_sums_kernel<<<1, 1024, 0, s>>>(ps, static_cast<int>(nb));
  MOE_KERNEL_CHECK();
  scan_apply_kernel<<<static_cast<unsigned>(nb), kScanThreads, 0, s>>>(pt, m, ps);
  MOE_KERNEL_CHECK();
  sort_offsets_kernel<<<grid_for(buckets), 256, 0, s>>>(pt, tiles, num_segments, static_cast<int*>(offsets.raw()));
  MOE_KERNEL_CHECK();
  sort_scatter_kernel<<<warp_blocks, 256, 0, s>>>(pk, n, num_segments, tiles, chunks, pt,
                                                  static_cast<int*>(perm.raw()));
  MOE_KERNEL_CHECK();
}

void inverse_permutation(const Tensor& perm, Tensor& inv) {
  const long long n = perm.numel();
  inverse_permutation_kernel<<<grid_for(n), 256, 0, stream(perm.device())>>>(static_cast<const int*>(perm.raw()),
                                                                             static_cast<int*>(inv.raw()), n);
  MOE_KERNEL_CHECK();
}

}  // namespace moe::cuda
