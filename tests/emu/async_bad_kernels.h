// Launchers of the deliberately misused tensor-core and asynchronous instructions of
// tests/emu/async_bad_kernels.cu; each returns the launch's cudaError_t as an int (plain C++ header).
// A `correct` flag, where there is one, runs the correct twin, which must draw no report.
#pragma once

namespace moe::emu_test {

int ldmatrix_misaligned(float* out);                    // lane 3's row address 8 bytes off
int mma_half_warp(float* out);                          // 16 lanes enter mma.sync
int wgmma_accumulator_early(float* out, bool correct);  // reads d before wgmma.wait_group
int wgmma_without_fence(float* out);                    // no wgmma.fence before the first wgmma
int wgmma_unfenced_smem(float* out, bool correct);      // tile written without fence.proxy.async
int wgmma_tile_changed(float* out);                     // a thread rewrites the tile before the wait
int wgmma_partial_warpgroup(float* out);                // warp 3 of the warpgroup skips the wgmma
int wgmma_tile_not_landed(float* out, bool correct);    // a TMA load into the tile, no mbarrier wait
int mbarrier_arrivals_missing(float* out);              // count 2, one arrival, a wait
int tma_bytes_mismatch(float* out, int expect_bytes);   // expect_tx other than the box's bytes
int mbarrier_uninitialised(float* out);                 // arrive on a barrier never initialised
int mbarrier_orders(float* out, bool wait);             // a write, arrive; another warp reads (after a wait?)
int named_barrier_orders(float* out, bool barrier);     // the same through bar.arrive / bar.sync
int named_barrier_bad_count(float* out);                // bar.sync 1, 48
int setmaxnreg_overdrawn(float* out);                   // two warpgroups inc to 240 with no dec
int tma_misaligned(float* out);                         // a TMA load to shared memory 64 bytes off

}  // namespace moe::emu_test
