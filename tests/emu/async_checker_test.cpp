// The CUDA emulator's checks of the tensor-core and asynchronous instructions (cuda/common/ptx.cuh), on
// the deliberately misused kernels of async_bad_kernels.cu: each misuse the tensor-core issue lists is
// reported with its kind, kernel, thread and source line (or, for a wait that can never end, as a
// deadlock saying what is missing), and the correct twins draw no report. The layouts themselves are
// checked by tests/gpu/ptx_instructions_parity_test.cpp.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>

#include "emu/async_bad_kernels.h"
#include "emu/emu_test_support.h"
#include "moe_emu/control.h"

using namespace moe::emu_test;

namespace {
float* out_buffer() {
  static float* p = device_buffer<float>(512);
  return p;
}
}  // namespace

TEST_CASE("ldmatrix and mma.sync misuse", "[emu][async]") {
  moe_emu::take_reports();
  CHECK(ldmatrix_misaligned(out_buffer()) == cudaErrorMisalignedAddress);
  auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "misaligned", at("ldm-misaligned"), "row address of lane 3 is not 16-byte aligned"));
  CHECK(mma_half_warp(out_buffer()) != cudaSuccess);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "deadlock", "mma_half_warp_kernel", "16 threads wait in warp collectives"));
}

TEST_CASE("a wgmma's accumulators are owned until its wait", "[emu][async]") {
  moe_emu::take_reports();
  CHECK(wgmma_accumulator_early(out_buffer(), true) == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  CHECK(wgmma_accumulator_early(out_buffer(), false) != cudaSuccess);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "async-misuse", at("wgmma-early"), "read of an accumulator register of a wgmma.mma_async in flight"));
}

TEST_CASE("wgmma needs wgmma.fence and fenced, unchanged shared memory", "[emu][async]") {
  moe_emu::take_reports();
  CHECK(wgmma_without_fence(out_buffer()) != cudaSuccess);
  auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "async-misuse", at("wgmma-no-fence"), "no wgmma.fence"));
  CHECK(wgmma_unfenced_smem(out_buffer(), true) == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  CHECK(wgmma_unfenced_smem(out_buffer(), false) != cudaSuccess);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "async-misuse", at("wgmma-unfenced"), "no fence.proxy.async after the write"));
  CHECK(wgmma_tile_changed(out_buffer()) != cudaSuccess);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "async-misuse", at("wgmma-changed"),
            "that a wgmma.mma_async of this thread reads, before the "
            "wgmma.wait_group that covers it"));
}

TEST_CASE("a warpgroup collective entered by part of the warpgroup is a deadlock", "[emu][async]") {
  moe_emu::take_reports();
  CHECK(wgmma_partial_warpgroup(out_buffer()) != cudaSuccess);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "deadlock", at("wgmma-partial"), "wgmma.mma_async entered by 96 of the 128 threads of warpgroup 0"));
}

TEST_CASE("a tile read before its TMA copy landed", "[emu][async]") {
  moe_emu::take_reports();
  CHECK(wgmma_tile_not_landed(out_buffer(), true) == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  CHECK(wgmma_tile_not_landed(out_buffer(), false) != cudaSuccess);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "async-copy-in-flight", at("wgmma-not-landed"), "before the asynchronous copy into it has landed"));
}

TEST_CASE("mbarrier phases that can never complete are deadlocks that say why", "[emu][async]") {
  moe_emu::take_reports();
  CHECK(mbarrier_arrivals_missing(out_buffer()) != cudaSuccess);
  auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "deadlock", at("mbar-missing"), "1 of 2 arrivals pending"));
  CHECK(tma_bytes_mismatch(out_buffer(), 2048) == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  CHECK(tma_bytes_mismatch(out_buffer(), 1000) != cudaSuccess);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "deadlock", at("tma-bytes"), "1048 transaction bytes delivered beyond those expected"));
  CHECK(tma_bytes_mismatch(out_buffer(), 4096) != cudaSuccess);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "deadlock", at("tma-bytes"), "2048 transaction bytes expected that no copy delivers"));
  CHECK(mbarrier_uninitialised(out_buffer()) != cudaSuccess);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "async-misuse", at("mbar-uninit"), "never initialised"));
}

TEST_CASE("mbarriers and named barriers order the warps they join", "[emu][async]") {
  moe_emu::take_reports();
  CHECK(mbarrier_orders(out_buffer(), true) == cudaSuccess);
  CHECK(named_barrier_orders(out_buffer(), true) == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  CHECK(mbarrier_orders(out_buffer(), false) != cudaSuccess);
  auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "race", at("mbar-read"), "which another thread wrote with no barrier between"));
  CHECK(named_barrier_orders(out_buffer(), false) != cudaSuccess);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "race", at("named-read")));
  CHECK(named_barrier_bad_count(out_buffer()) != cudaSuccess);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "warp-misuse", at("named-count"), "thread count of 48"));
}

TEST_CASE("setmaxnreg beyond the block's registers, a misaligned TMA destination", "[emu][async]") {
  moe_emu::take_reports();
  CHECK(setmaxnreg_overdrawn(out_buffer()) != cudaSuccess);
  auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "deadlock", at("setmaxnreg"), "setmaxnreg.inc to 240 registers per thread waits"));
  CHECK(tma_misaligned(out_buffer()) == cudaErrorMisalignedAddress);
  r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "misaligned", at("tma-misaligned"), "128-byte aligned"));
}
