// The emulator's checks of what a GPU shows only as wrong numbers (emu/runtime/global_shadow.h,
// scheduler.cpp, blas_checks.h, kernels.cpp), each on a deliberately buggy kernel or call that must be
// reported with its kind, source line, block and thread, beside a correct twin that must not be:
// races between blocks through global memory (atomics excepted), reads of device memory never written
// since allocation (by a kernel, and by cuBLAS), results that depend on the block or thread order
// (they differ between MOE_EMU_SCHEDULE_SEED seeds), cuBLAS / cuBLASLt / cub calls the real libraries
// refuse or leave undefined (type combinations, workspace, aliasing, a heuristic with no algorithm:
// moe's linear falls back), and a __global__ of the sources that no launch reached.
#include <catch2/catch.hpp>
#include <cub/device/device_radix_sort.cuh>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <set>
#include <string>
#include <vector>

#include "emu/blind_spot_kernels.h"
#include "emu/emu_test_support.h"
#include "moe_emu/control.h"
#include "ops/matmul.h"
#include "tensor/tensor.h"

using namespace moe::emu_test;

TEST_CASE("two blocks of one launch touching a global element race; atomics do not", "[emu][blind-spot]") {
  int* out = device_buffer<int>(8);
  moe_emu::take_reports();
  block_race(out, true);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  block_atomics(out);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  block_race(out, false);
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK((has(r, "race", at("global-race-write"), "read in this launch") ||
         has(r, "race", at("global-race-read"), "wrote in this launch")));
  CHECK(has(r, "race", "block_race_kernel", "thread (0,0,0)"));
  cudaFree(out);
}

TEST_CASE("reading device memory nothing wrote since its allocation is reported", "[emu][blind-spot]") {
  int *fresh = nullptr, *out = device_buffer<int>(100);
  REQUIRE(cudaMalloc(&fresh, 100 * sizeof(int)) == cudaSuccess);
  moe_emu::take_reports();
  read_into(fresh, out, 100);
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
  auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "uninitialized-read", at("global-read"), "never written since its allocation"));
  CHECK(has(r, "uninitialized-read", "read_into_kernel, block (", ", thread ("));
  write_iota(fresh, 100);  // the twin: written first (by a kernel, then by a memset)
  read_into(fresh, out, 100);
  REQUIRE(cudaMemset(out, 0, 100 * sizeof(int)) == cudaSuccess);
  read_into(out, fresh, 100);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(r.empty());
  cudaFree(fresh);
  cudaFree(out);
}

TEST_CASE("a result that depends on the block or thread order differs between schedule seeds", "[emu][blind-spot]") {
  int* out = device_buffer<int>(1);
  auto results = [&](void (*kernel)(int*, bool), bool max) {
    std::set<int> seen;
    for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
      const uint64_t before = moe_emu::set_schedule_seed(seed);
      REQUIRE(cudaMemset(out, 0, sizeof(int)) == cudaSuccess);
      kernel(out, max);
      int v = -1;
      REQUIRE(cudaMemcpy(&v, out, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
      moe_emu::set_schedule_seed(before);
      seen.insert(v);
    }
    return seen;
  };
  CHECK(results(last_block, false).size() > 1);  // atomicExch: the last block to run wins
  CHECK(results(last_block, true) == std::set<int>{63});
  CHECK(results(last_thread, false).size() > 1);  // ... the last thread to run
  CHECK(results(last_thread, true) == std::set<int>{255});
  CHECK(moe_emu::take_reports().empty());
  cudaFree(out);
}

TEST_CASE("cuBLAS refuses type combinations it does not support and outputs that alias inputs", "[emu][blind-spot]") {
  cublasHandle_t h = nullptr;
  REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  float* a = device_buffer<float>(64);
  float* c = device_buffer<float>(64);
  const float one = 1.f, zero = 0.f;
  moe_emu::take_reports();
  auto gemm = [&](const void* pa, cudaDataType_t t, void* pc, cublasComputeType_t compute) {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, pa, t, 8, pa, t, 8, &zero, pc, t, 8, compute,
                        CUBLAS_GEMM_DEFAULT);
  };
  CHECK(gemm(a, CUDA_R_32F, c, CUBLAS_COMPUTE_32F) == CUBLAS_STATUS_SUCCESS);  // the twins
  CHECK(gemm(a, CUDA_R_32F, c, CUBLAS_COMPUTE_32F_FAST_TF32) == CUBLAS_STATUS_SUCCESS);
  CHECK(gemm(a, CUDA_R_16BF, c, CUBLAS_COMPUTE_32F) == CUBLAS_STATUS_SUCCESS);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  CHECK(gemm(a, CUDA_R_16BF, c, CUBLAS_COMPUTE_32F_FAST_16F) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(gemm(a, CUDA_R_32F, a, CUBLAS_COMPUTE_32F) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, CUDA_R_32F, 4, 16, a, CUDA_R_32F, 4,
                                   16, &zero, c, CUDA_R_32F, 4, 0, 2, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_INVALID_VALUE);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "api-misuse", "is not a combination cublasGemmEx supports", "blind_spot_test.cpp"));
  CHECK(has(r, "api-misuse", "C overlaps A"));
  CHECK(has(r, "api-misuse", "the batches of C overlap"));
  cudaFree(a);
  cudaFree(c);
  cublasDestroy(h);
}

TEST_CASE("cuBLAS reading an operand nothing wrote is reported when it runs", "[emu][blind-spot]") {
  cublasHandle_t h = nullptr;
  REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  float *fresh = nullptr, *c = device_buffer<float>(64);
  REQUIRE(cudaMalloc(&fresh, 64 * sizeof(float)) == cudaSuccess);
  const float one = 1.f, zero = 0.f;
  moe_emu::take_reports();
  CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, fresh, CUDA_R_32F, 8, c, CUDA_R_32F, 8, &zero, c,
                     CUDA_R_32F, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_INVALID_VALUE);  // C is B
  float* c2 = device_buffer<float>(64);
  CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, fresh, CUDA_R_32F, 8, c, CUDA_R_32F, 8, &zero, c2,
                     CUDA_R_32F, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "uninitialized-read", "cublasGemmStridedBatchedEx at tests/emu/blind_spot_test.cpp", "operand A"));
  cudaFree(fresh);
  cudaFree(c);
  cudaFree(c2);
  cublasDestroy(h);
}

TEST_CASE("cuBLASLt holds the caller to the algorithm's workspace", "[emu][blind-spot]") {
  cublasLtHandle_t lt = nullptr;
  REQUIRE(cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS);
  const int m = 4, n = 4, k = 64;  // k >= 8 max(m, n): a split-K algorithm, which needs a workspace
  float* a = device_buffer<float>(m * k);
  float* b = device_buffer<float>(k * n);
  float* d = device_buffer<float>(m * n);
  float* ws = device_buffer<float>(1024);
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  REQUIRE(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, m) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
  const uint64_t max_ws = 4096;
  REQUIRE(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws,
                                               sizeof(max_ws)) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  REQUIRE(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &result, &found) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(found == 1);
  CHECK(result.workspaceSize > 0);
  const float one = 1.f, zero = 0.f;
  CHECK(cublasLtMatmul(lt, desc, &one, a, la, b, lb, &zero, d, ld, d, ld, &result.algo, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasLtMatmul(lt, desc, &one, a, la, b, lb, &zero, d, ld, d, ld, &result.algo, ws, max_ws, nullptr) ==
        CUBLAS_STATUS_SUCCESS);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  moe_emu::set_lt_heuristic_offers(false);
  CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &result, &found) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(found == 0);
  moe_emu::set_lt_heuristic_offers(true);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
  for (float* p : {a, b, d, ws}) cudaFree(p);
}

TEST_CASE("moe's linear falls back when cuBLASLt's heuristic offers no algorithm", "[emu][blind-spot]") {
  using namespace moe;
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor w = Tensor::from_vector(std::vector<float>{1, 0, -1, 2, 1, 0}, Shape{3, 2});
  const Tensor bias = Tensor::from_vector(std::vector<float>{0.5f, -0.5f}, Shape{2});
  Tensor cpu = Tensor::empty(Shape{2, 2}, DType::f32, Device::cpu());
  linear_forward(x, w, bias, cpu);
  const Device gpu = Device::cuda(0);
  Tensor out = Tensor::empty(Shape{2, 2}, DType::f32, gpu);
  const bool before = moe_emu::set_lt_heuristic_offers(false);
  linear_forward(x.to(gpu), w.to(gpu), bias.to(gpu), out);
  moe_emu::set_lt_heuristic_offers(before);
  CHECK(out.to_vector<float>() == cpu.to_vector<float>());
  CHECK(moe_emu::take_reports().empty());
}

TEST_CASE("cub's sort refuses buffers that overlap", "[emu][blind-spot]") {
  int* keys = device_buffer<int>(16);
  int* values = device_buffer<int>(16);
  int* out = device_buffer<int>(32);
  size_t temp_bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, out, values, out + 16, 16) == cudaSuccess);
  void* temp = device_buffer<char>(temp_bytes);
  moe_emu::take_reports();
  CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, out, values, out + 16, 16) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys, values, out + 16, 16) == cudaErrorInvalidValue);
  cudaGetLastError();
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "api-misuse", "keys_in overlaps keys_out", "blind_spot_test.cpp"));
  for (void* p : {static_cast<void*>(keys), static_cast<void*>(values), static_cast<void*>(out), temp}) cudaFree(p);
}

TEST_CASE("a __global__ of the sources that no launch reached is listed, its launched twin is not", "[emu][blind-spot]") {
  launch_twin();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const auto missing = moe_emu::unlaunched_kernels(std::string(MOE_SOURCE_DIR) + "/tests/emu");
  std::string text;
  for (const auto& m : missing) text += m + "\n";
  INFO(text);
  CHECK(text.find("never_instantiated_kernel (") != std::string::npos);
  CHECK(text.find(at("never-instantiated").substr(std::string("tests/emu/").size()) +
                  "): no instantiation compiled into this program") != std::string::npos);
  CHECK(text.find("launched_twin_kernel") == std::string::npos);
}
