// The CUDA emulator's checker, tested on kernels with deliberate bugs (bad_kernels.cu): a missing
// barrier (race), out-of-bounds global and shared writes, divergent barriers (exited threads and two
// call sites), uninitialised shared memory, a missing cp.async wait, a deadlocked shuffle, a misaligned
// vector load and wmma load, a launch above __launch_bounds__, memory of another device, and API calls
// with bad device pointers. Each report must name its kind, kernel, block, thread and source line;
// the correct twins (barrier, __syncwarp, wait, same-value writes) must produce none.
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "emu/bad_kernels.h"
#include "emu/emu_test_support.h"
#include "moe_emu/control.h"

using namespace moe::emu_test;

TEST_CASE("a missing __syncthreads is a race naming both accesses", "[emu][checker]") {
  int* out = device_buffer<int>(128);
  moe_emu::take_reports();
  CHECK(neighbour(out, true) == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  CHECK(neighbour(out, false) == cudaErrorLaunchFailure);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "race", at("race-write"), at("race-read")));
  CHECK(has(r, "race", "neighbour_kernel", "thread (1,0,0)"));
  cudaFree(out);
}

TEST_CASE("out-of-bounds global and shared writes stop the kernel", "[emu][checker]") {
  float* f = device_buffer<float>(40);
  moe_emu::take_reports();
  CHECK(oob_global(f, 8) == cudaSuccess);  // elements 8 .. 39: inside
  CHECK(oob_global(f, 9) == cudaErrorIllegalAddress);
  auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "out-of-bounds", at("oob-global"), "thread (31,0,0)"));
  CHECK(has(r, "out-of-bounds", "4 bytes past the end of a 160-byte allocation"));
  int* out = device_buffer<int>(64);
  CHECK(oob_shared(out) == cudaErrorIllegalAddress);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "out-of-bounds", at("oob-shared"), "thread (32,0,0)"));
  cudaFree(f);
  cudaFree(out);
}

TEST_CASE("divergent barriers are reported", "[emu][checker]") {
  int* out = device_buffer<int>(32);
  moe_emu::take_reports();
  CHECK(divergent_exit(out) != cudaSuccess);
  auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "divergent-barrier", at("divergent-exit"), "16 threads of the block have exited"));
  CHECK(divergent_sites(out) != cudaSuccess);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "divergent-barrier", "different __syncthreads"));
  CHECK((has(r, "divergent-barrier", at("divergent-a"), at("divergent-b")) ||
         has(r, "divergent-barrier", at("divergent-b"), at("divergent-a"))));
  cudaFree(out);
}

TEST_CASE("uninitialised shared memory, and writes of the value already there", "[emu][checker]") {
  int* out = device_buffer<int>(64);
  moe_emu::take_reports();
  CHECK(uninitialized(out) == cudaErrorLaunchFailure);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "uninitialized-read", at("uninitialized"), "thread (32,0,0)"));
  CHECK(same_value(out) == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  cudaFree(out);
}

TEST_CASE("lanes of a warp are ordered by __syncwarp only", "[emu][checker]") {
  int* out = device_buffer<int>(33);
  moe_emu::take_reports();
  CHECK(warp_order(out, true, false) == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  // No sync, or only a shuffle: CUDA's shuffles imply no memory ordering (compute-sanitizer's racecheck
  // reports a shuffle reduction followed by lane 0 overwriting what the lanes read).
  for (const bool shuffle : {false, true}) {
    CHECK(warp_order(out, false, shuffle) == cudaErrorLaunchFailure);
    const auto r = moe_emu::take_reports();
    INFO("shuffle " << shuffle << ": " << all(r));
    CHECK(has(r, "race", at("warp-read"), "thread (1,0,0)"));
  }
  cudaFree(out);
}

TEST_CASE("a cp.async copy lands only at its wait", "[emu][checker]") {
  float* in = device_buffer<float>(256);
  float* out = device_buffer<float>(64);
  std::vector<float> host(256);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i);
  REQUIRE(cudaMemcpy(in, host.data(), 256 * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  moe_emu::take_reports();
  CHECK(async_copy(in, out, true) == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  std::vector<float> got(64);
  REQUIRE(cudaMemcpy(got.data(), out, 64 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(got[0] == 4.f);
  CHECK(got[63] == 0.f);
  CHECK(async_copy(in, out, false) == cudaErrorLaunchFailure);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "async-copy-in-flight", at("async-read")));
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("a shuffle that half the warp never reaches deadlocks", "[emu][checker]") {
  int* out = device_buffer<int>(32);
  moe_emu::take_reports();
  CHECK(shuffle_deadlock(out) == cudaErrorLaunchFailure);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "deadlock", at("shuffle-deadlock"), "16 threads wait in warp collectives"));
  cudaFree(out);
}

TEST_CASE("misaligned accesses, launch bounds and wmma alignment fail as on a GPU", "[emu][checker]") {
  float* in = device_buffer<float>(64);
  float* out = device_buffer<float>(64);
  int* iout = device_buffer<int>(128);
  moe_emu::take_reports();
  CHECK(misaligned(in, out) == cudaErrorMisalignedAddress);
  auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "misaligned", at("misaligned"), "not 16-byte aligned"));
  CHECK(bounded(iout, 64) == cudaSuccess);
  CHECK(bounded(iout, 128) == cudaErrorLaunchOutOfResources);
  r = moe_emu::take_reports();
  CHECK(has(r, "launch-bound", "__launch_bounds__(64)"));
  CHECK(wmma_misaligned(in, out) == cudaErrorMisalignedAddress);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "wmma-misuse", at("wmma-misaligned"), "256-bit aligned"));
  cudaFree(in);
  cudaFree(out);
  cudaFree(iout);
}

TEST_CASE("a kernel reading another device's memory faults", "[emu][checker]") {
  int n = 0;
  REQUIRE(cudaGetDeviceCount(&n) == cudaSuccess);
  REQUIRE(n >= 2);  // the emulator has two devices unless MOE_EMU_DEVICES says otherwise
  float* in0 = device_buffer<float>(32, 0);
  float* out1 = device_buffer<float>(32, 1);
  float* in1 = device_buffer<float>(32, 1);
  moe_emu::take_reports();
  CHECK(read(in1, out1, 1) == cudaSuccess);
  CHECK(read(in0, out1, 1) == cudaErrorIllegalAddress);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "wrong-device", at("wrong-device"), "memory of cuda:0 but the kernel runs on cuda:1"));
  cudaFree(in0);
  cudaFree(out1);
  cudaFree(in1);
}

TEST_CASE("runtime calls check their device pointers", "[emu][checker]") {
  float* d = device_buffer<float>(16);
  std::vector<float> host(32);
  moe_emu::take_reports();
  CHECK(cudaMemcpy(host.data(), d, 16 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(cudaMemcpy(host.data(), d, 32 * sizeof(float), cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  CHECK(std::string(cudaGetErrorString(cudaGetLastError())).find("64 bytes past the end of a 64-byte allocation") !=
        std::string::npos);
  CHECK(cudaMemset(host.data(), 0, 4) == cudaErrorInvalidValue);
  CHECK(cudaFree(host.data()) == cudaErrorInvalidValue);
  const auto r = moe_emu::take_reports();
  CHECK(r.size() == 3);
  cudaGetLastError();  // the refused calls' error is not left for the next test
  cudaFree(d);
}
