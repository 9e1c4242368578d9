// The instruction probes (ptx_probes.h): one small kernel per instruction family of cuda/common/ptx.cuh,
// each running the instruction on what the test put in global memory and writing back what every thread
// got, so that tests/gpu/ptx_instructions_parity_test.cpp checks the layouts on the emulator (in CI)
// and on a GPU (scripts/gpu-check.sh runs it first). Hopper probes trap on a GPU build without sm_90a.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstring>

#include "common/cuda_check.h"
#include "common/ptx.cuh"
#include "common/tensor_map.cuh"
#include "gpu/ptx_probes.h"

namespace moe::ptx_probe {
namespace {
namespace ptx = moe::cuda::ptx;

template <class T>
T* upload(const std::vector<T>& v, size_t extra = 0) {
  T* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, (v.size() + extra) * sizeof(T) + 16));
  CUDA_CHECK(cudaMemset(p, 0, (v.size() + extra) * sizeof(T) + 16));
  if (!v.empty()) CUDA_CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}
template <class T>
std::vector<T> download(const T* p, size_t n) {
  std::vector<T> v(n);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

template <class T>
__global__ void mma_kernel(const uint32_t* a, const uint32_t* b, const float* c, float* d) {
  const int l = threadIdx.x;
  const uint32_t ra[4] = {a[4 * l], a[4 * l + 1], a[4 * l + 2], a[4 * l + 3]}, rb[2] = {b[2 * l], b[2 * l + 1]};
  const float rc[4] = {c[4 * l], c[4 * l + 1], c[4 * l + 2], c[4 * l + 3]};
  float rd[4];
  ptx::mma_m16n8k16<T>(rd, ra, rb, rc);
  for (int i = 0; i < 4; ++i) d[4 * l + i] = rd[i];
}

__global__ void ldmatrix_kernel(const uint16_t* image, int n, const int* rows, int mode, uint32_t* out) {
  extern __shared__ __align__(16) uint16_t ldm_smem[];
  for (int i = threadIdx.x; i < n; i += 32) ldm_smem[i] = image[i];
  __syncthreads();
  const uint16_t* row = ldm_smem + rows[threadIdx.x];
  uint32_t r[4] = {0, 0, 0, 0};
  switch (mode) {  // matrices * 2 + trans
    case 2: { uint32_t x[1]; ptx::ldmatrix<1, false>(x, row); r[0] = x[0]; break; }
    case 3: { uint32_t x[1]; ptx::ldmatrix<1, true>(x, row); r[0] = x[0]; break; }
    case 4: { uint32_t x[2]; ptx::ldmatrix<2, false>(x, row); r[0] = x[0], r[1] = x[1]; break; }
    case 5: { uint32_t x[2]; ptx::ldmatrix<2, true>(x, row); r[0] = x[0], r[1] = x[1]; break; }
    case 8: ptx::ldmatrix<4, false>(r, row); break;
    default: ptx::ldmatrix<4, true>(r, row); break;
  }
  for (int j = 0; j < 4; ++j) out[4 * threadIdx.x + j] = r[j];
}

template <int Bytes, bool Global>
__global__ void cp_async_kernel(const uint8_t* src, int src_bytes, uint8_t* first, uint8_t* all) {
  __shared__ __align__(16) uint8_t sm[32 * 16];
  const int t = threadIdx.x;
  for (int i = t; i < 32 * Bytes; i += 32) sm[i] = 0xab;  // zero fill must overwrite this
  __syncthreads();
  for (int g = 0; g < 3; ++g) {
    if (t % 3 == g) ptx::cp_async<Bytes, Global>(sm + Bytes * t, src + Bytes * t, src_bytes);
    ptx::cp_async_commit();
  }
  ptx::cp_async_wait<2>();  // group 0 of every thread has landed
  __syncthreads();
  for (int i = t; i < 32 * Bytes; i += 32)
    if ((i / Bytes) % 3 == 0) first[i] = sm[i];
  __syncthreads();
  ptx::cp_async_wait<0>();
  __syncthreads();
  for (int i = t; i < 32 * Bytes; i += 32) all[i] = sm[i];
}

struct WgmmaArgs {
  bool bf16, a_in_regs, a_mn, b_mn, accumulate;
  uint32_t a_start, a_lbo, a_sbo, b_start, b_lbo, b_sbo;
  int a_swizzle, b_swizzle;
};

__device__ ptx::Swizzle swizzle_mode(int bytes) {
  using ptx::Swizzle;
  return bytes == 128 ? Swizzle::b128 : bytes == 64 ? Swizzle::b64 : bytes == 32 ? Swizzle::b32 : Swizzle::none;
}

template <int N, class T>
__device__ void wgmma_variant(float (&acc)[N / 2], const uint32_t (&ra)[4], uint64_t da, uint64_t db, const WgmmaArgs& p) {
  if (p.a_in_regs && p.b_mn) ptx::wgmma<N, T, ptx::Major::MN>(acc, ra, db, p.accumulate);
  else if (p.a_in_regs) ptx::wgmma<N, T, ptx::Major::K>(acc, ra, db, p.accumulate);
  else if (p.a_mn && p.b_mn) ptx::wgmma<N, T, ptx::Major::MN, ptx::Major::MN>(acc, da, db, p.accumulate);
  else if (p.a_mn) ptx::wgmma<N, T, ptx::Major::MN, ptx::Major::K>(acc, da, db, p.accumulate);
  else if (p.b_mn) ptx::wgmma<N, T, ptx::Major::K, ptx::Major::MN>(acc, da, db, p.accumulate);
  else ptx::wgmma<N, T, ptx::Major::K, ptx::Major::K>(acc, da, db, p.accumulate);
}

template <int N>
__global__ void __launch_bounds__(128) wgmma_kernel(WgmmaArgs p, const uint8_t* image, int image_bytes,
                                                    const uint32_t* a_regs, const float* c, float* d) {
  extern __shared__ __align__(1024) uint8_t wg_smem[];
  const int t = threadIdx.x;
  for (int i = t; i < image_bytes / 16; i += 128)
    reinterpret_cast<uint4*>(wg_smem)[i] = reinterpret_cast<const uint4*>(image)[i];
  ptx::fence_proxy_async();  // the generic-proxy writes above become visible to wgmma
  __syncthreads();
  float acc[N / 2];
  for (int r = 0; r < N / 2; ++r) acc[r] = c[(N / 2) * t + r];
  const uint32_t ra[4] = {a_regs[4 * t], a_regs[4 * t + 1], a_regs[4 * t + 2], a_regs[4 * t + 3]};
  const uint64_t da = ptx::make_smem_desc(wg_smem + p.a_start, p.a_lbo, p.a_sbo, swizzle_mode(p.a_swizzle));
  const uint64_t db = ptx::make_smem_desc(wg_smem + p.b_start, p.b_lbo, p.b_sbo, swizzle_mode(p.b_swizzle));
  ptx::wgmma_fence();
  if (p.bf16) wgmma_variant<N, __nv_bfloat16>(acc, ra, da, db, p);
  else wgmma_variant<N, __half>(acc, ra, da, db, p);
  ptx::wgmma_commit();
  ptx::wgmma_wait<0>();
  ptx::fence_registers(acc);
  for (int r = 0; r < N / 2; ++r) d[(N / 2) * t + r] = acc[r];
}

struct Coords {
  int32_t c[5];
};

/// Runs f with the first `rank` coordinates as arguments.
template <class F>
__device__ void with_coords(int rank, const Coords& c, F f) {
  switch (rank) {
    case 1: f(c.c[0]); break;
    case 2: f(c.c[0], c.c[1]); break;
    case 3: f(c.c[0], c.c[1], c.c[2]); break;
    case 4: f(c.c[0], c.c[1], c.c[2], c.c[3]); break;
    default: f(c.c[0], c.c[1], c.c[2], c.c[3], c.c[4]); break;
  }
}

__global__ void tma_load_kernel(const __grid_constant__ CUtensorMap map, int rank, Coords c, uint32_t bytes, uint8_t* out) {
  extern __shared__ __align__(1024) uint8_t load_smem[];
  uint64_t* bar = reinterpret_cast<uint64_t*>(load_smem + (bytes + 127) / 128 * 128);
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar, 1);
    ptx::fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::mbarrier_arrive_expect_tx(bar, bytes);
    with_coords(rank, c, [&](auto... x) { ptx::tma_load(load_smem, &map, bar, x...); });
  }
  ptx::mbarrier_wait(bar, 0);
  for (uint32_t i = threadIdx.x; i < bytes; i += blockDim.x) out[i] = load_smem[i];
}

__global__ void tma_store_kernel(const __grid_constant__ CUtensorMap map, int rank, Coords c, const uint8_t* image,
                                 uint32_t bytes, bool reduce_add) {
  extern __shared__ __align__(1024) uint8_t store_smem[];
  for (uint32_t i = threadIdx.x; i < bytes; i += blockDim.x) store_smem[i] = image[i];
  ptx::fence_proxy_async();  // the generic-proxy writes above become visible to the TMA unit
  __syncthreads();
  if (threadIdx.x == 0) {
    if (reduce_add) with_coords(rank, c, [&](auto... x) { ptx::tma_store<true>(&map, store_smem, x...); });
    else with_coords(rank, c, [&](auto... x) { ptx::tma_store<false>(&map, store_smem, x...); });
    ptx::bulk_commit();
    ptx::bulk_wait<0>();
  }
}

constexpr int kTileBytes = 16 * 128;  // pipeline tiles: 16 rows of 32 f32, 128B-swizzled

__global__ void __launch_bounds__(384, 1) pipeline_kernel(const __grid_constant__ CUtensorMap map, int tiles,
                                                          int stages, float* sums) {
  extern __shared__ __align__(1024) uint8_t pipe_smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(pipe_smem + stages * kTileBytes);
  uint64_t* empty = full + stages;
  float* partial = reinterpret_cast<float*>(empty + stages);
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) ptx::mbarrier_init(&full[s], 1), ptx::mbarrier_init(&empty[s], 256);
    ptx::fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x < 128) {  // the producer warpgroup: one elected thread of warp 0 issues the loads
    ptx::setmaxnreg<40, false>();
    if (threadIdx.x < 32 && ptx::elect_one())
      for (int i = 0; i < tiles; ++i) {
        const int s = i % stages;
        if (i >= stages) ptx::mbarrier_wait(&empty[s], (i / stages - 1) & 1);
        ptx::mbarrier_arrive_expect_tx(&full[s], kTileBytes);
        ptx::tma_load(pipe_smem + s * kTileBytes, &map, &full[s], 0, 16 * i);
      }
    return;
  }
  ptx::setmaxnreg<232, true>();
  const int ct = threadIdx.x - 128;
  for (int i = 0; i < tiles; ++i) {
    const int s = i % stages;
    ptx::mbarrier_wait(&full[s], (i / stages) & 1);
    const float* tile = reinterpret_cast<const float*>(pipe_smem + s * kTileBytes);
    float v = 0.f;
    for (int e = 2 * ct; e < 2 * ct + 2; ++e) {  // element (e / 32, e % 32) at its 128B-swizzled place
      const int off = (e / 32) * 128 + (e % 32) * 4;
      v += tile[(off ^ (((off >> 7) & 7) << 4)) / 4];
    }
    ptx::mbarrier_arrive(&empty[s]);
    partial[ct] = v;
    ptx::named_barrier_sync(1, 256);
    if (ct == 0) {
      float total = 0.f;
      for (int k = 0; k < 256; ++k) total += partial[k];
      sums[i] = total;
    }
    ptx::named_barrier_sync(1, 256);
  }
}

__global__ void arch_kernel(int* out) {
#ifdef MOE_CUDA_EMU
  *out = 1;  // the emulator runs the sm_90a instructions whatever the host
#else
  *out = MOE_PTX_SM90A;
#endif
}

CUtensorMap tensor_map(const TmaCase& t, void* base) {
  std::vector<uint64_t> strides;
  uint64_t stride = uint64_t(t.elem_bytes);
  for (size_t d = 0; d + 1 < t.dims.size(); ++d) strides.push_back(stride *= t.dims[d]);
  const CUtensorMapSwizzle sw = t.swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                : t.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                : t.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                  : CU_TENSOR_MAP_SWIZZLE_NONE;
  return cuda::make_tensor_map(t.elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                               base, int(t.dims.size()), t.dims.data(), strides.data(), t.box.data(), sw);
}

uint32_t box_bytes(const TmaCase& t) {
  uint32_t n = uint32_t(t.elem_bytes);
  for (uint32_t b : t.box) n *= b;
  return n;
}

Coords coords_of(const TmaCase& t) {
  Coords c{};
  for (size_t d = 0; d < t.coords.size(); ++d) c.c[d] = t.coords[d];
  return c;
}
}  // namespace

std::vector<float> mma(Elem e, const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, const std::vector<float>& c) {
  uint32_t *da = upload(a), *db = upload(b);
  float *dc = upload(c), *dd = upload(std::vector<float>(128));
  if (e == Elem::bf16) mma_kernel<__nv_bfloat16><<<1, 32>>>(da, db, dc, dd);
  else mma_kernel<__half><<<1, 32>>>(da, db, dc, dd);
  MOE_KERNEL_CHECK();
  std::vector<float> d = download(dd, 128);
  for (void* p : {(void*)da, (void*)db, (void*)dc, (void*)dd}) CUDA_CHECK(cudaFree(p));
  return d;
}

std::vector<uint32_t> ldmatrix(int matrices, bool trans, const std::vector<uint16_t>& image, const std::vector<int>& rows) {
  uint16_t* di = upload(image);
  int* dr = upload(rows);
  uint32_t* out = upload(std::vector<uint32_t>(128));
  ldmatrix_kernel<<<1, 32, image.size() * 2>>>(di, int(image.size()), dr, matrices * 2 + (trans ? 1 : 0), out);
  MOE_KERNEL_CHECK();
  std::vector<uint32_t> r = download(out, 128), packed;
  for (int l = 0; l < 32; ++l)
    for (int j = 0; j < matrices; ++j) packed.push_back(r[size_t(4 * l + j)]);
  for (void* p : {(void*)di, (void*)dr, (void*)out}) CUDA_CHECK(cudaFree(p));
  return packed;
}

CpAsyncResult cp_async(int bytes, bool global, int src_bytes, const std::vector<uint8_t>& src) {
  uint8_t *ds = upload(src), *first = upload(std::vector<uint8_t>(size_t(32 * bytes))),
          *all = upload(std::vector<uint8_t>(size_t(32 * bytes)));
  if (bytes == 4) cp_async_kernel<4, false><<<1, 32>>>(ds, src_bytes, first, all);
  else if (bytes == 8) cp_async_kernel<8, false><<<1, 32>>>(ds, src_bytes, first, all);
  else if (global) cp_async_kernel<16, true><<<1, 32>>>(ds, src_bytes, first, all);
  else cp_async_kernel<16, false><<<1, 32>>>(ds, src_bytes, first, all);
  MOE_KERNEL_CHECK();
  CpAsyncResult r{download(first, size_t(32 * bytes)), download(all, size_t(32 * bytes))};
  for (void* p : {(void*)ds, (void*)first, (void*)all}) CUDA_CHECK(cudaFree(p));
  return r;
}

std::vector<int> wgmma_shapes() { return {8, 24, 64, 256}; }

std::vector<float> wgmma(const WgmmaCase& w) {
  const WgmmaArgs p{w.elem == Elem::bf16, w.a_in_regs, w.a_mn_major, w.b_mn_major, w.accumulate, w.a_start, w.a_lbo,
                    w.a_sbo,           w.b_start,   w.b_lbo,      w.b_sbo,      w.a_swizzle,  w.b_swizzle};
  std::vector<uint8_t> image = w.smem;
  image.resize((image.size() + 15) / 16 * 16);
  std::vector<uint32_t> regs = w.a_regs;
  regs.resize(512);
  uint8_t* di = upload(image);
  uint32_t* dr = upload(regs);
  float *dc = upload(w.c), *dd = upload(std::vector<float>(size_t(64 * w.n)));
  const size_t smem = image.size();
  auto run = [&](auto kernel) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<1, 128, smem>>>(p, di, int(image.size()), dr, dc, dd);
  };
  switch (w.n) {
    case 8: run(wgmma_kernel<8>); break;
    case 24: run(wgmma_kernel<24>); break;
    case 64: run(wgmma_kernel<64>); break;
    case 256: run(wgmma_kernel<256>); break;
    default: MOE_FAIL("ptx_probe::wgmma: no probe for N = ", w.n);
  }
  MOE_KERNEL_CHECK();
  std::vector<float> d = download(dd, size_t(64 * w.n));
  for (void* q : {(void*)di, (void*)dr, (void*)dc, (void*)dd}) CUDA_CHECK(cudaFree(q));
  return d;
}

std::vector<uint8_t> tma_load(const TmaCase& t) {
  uint8_t* tensor = upload(t.tensor);
  const uint32_t bytes = box_bytes(t);
  uint8_t* out = upload(std::vector<uint8_t>(bytes));
  const CUtensorMap map = tensor_map(t, tensor);
  const size_t smem = (bytes + 127) / 128 * 128 + 8;
  CUDA_CHECK(cudaFuncSetAttribute(tma_load_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  tma_load_kernel<<<1, 128, smem>>>(map, int(t.dims.size()), coords_of(t), bytes, out);
  MOE_KERNEL_CHECK();
  std::vector<uint8_t> r = download(out, bytes);
  for (void* p : {(void*)tensor, (void*)out}) CUDA_CHECK(cudaFree(p));
  return r;
}

std::vector<uint8_t> tma_store(const TmaCase& t, const std::vector<uint8_t>& box_image, bool reduce_add) {
  uint8_t *tensor = upload(t.tensor), *image = upload(box_image);
  const CUtensorMap map = tensor_map(t, tensor);
  const uint32_t bytes = box_bytes(t);
  CUDA_CHECK(cudaFuncSetAttribute(tma_store_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  tma_store_kernel<<<1, 128, bytes>>>(map, int(t.dims.size()), coords_of(t), image, bytes, reduce_add);
  MOE_KERNEL_CHECK();
  std::vector<uint8_t> r = download(tensor, t.tensor.size());
  for (void* p : {(void*)tensor, (void*)image}) CUDA_CHECK(cudaFree(p));
  return r;
}

std::vector<float> pipeline(const std::vector<float>& tiles, int stages) {
  const int count = int(tiles.size() / 512);
  float* tensor = upload(tiles);
  float* sums = upload(std::vector<float>(size_t(count)));
  TmaCase t;
  t.elem_bytes = 4, t.dims = {32, uint64_t(16 * count)}, t.box = {32, 16}, t.swizzle = 128;
  const CUtensorMap map = tensor_map(t, tensor);
  const size_t smem = size_t(stages) * kTileBytes + 16 * size_t(stages) + 256 * 4;
  CUDA_CHECK(cudaFuncSetAttribute(pipeline_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  pipeline_kernel<<<1, 384, smem>>>(map, count, stages, sums);
  MOE_KERNEL_CHECK();
  std::vector<float> r = download(sums, size_t(count));
  for (void* p : {(void*)tensor, (void*)sums}) CUDA_CHECK(cudaFree(p));
  return r;
}

bool has_sm90a() {
  int* d = upload(std::vector<int>(1));
  arch_kernel<<<1, 1>>>(d);
  MOE_KERNEL_CHECK();
  const bool yes = download(d, 1)[0] != 0;
  CUDA_CHECK(cudaFree(d));
  return yes;
}

}  // namespace moe::ptx_probe
