// Launchers of the instruction probes (ptx_probes.cu): small kernels that run one tensor-core or
// asynchronous instruction of cuda/common/ptx.cuh on inputs the test chooses and return what each
// thread got, so that tests/gpu/ptx_instructions_parity_test.cpp can compare it with layout tables
// written from the PTX ISA, on the emulator and on a GPU alike. Plain C++ (host vectors in and out).
#pragma once
#include <cstdint>
#include <vector>

namespace moe::ptx_probe {

enum class Elem { bf16, f16 };

/// One warp: lane l takes a[4l..4l+3], b[2l, 2l+1], c[4l..4l+3] through mma.m16n8k16; d[4l..4l+3] back.
std::vector<float> mma(Elem e, const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                       const std::vector<float>& c);

/// One warp: shared memory holds `image`; lane l gives the row at element offset rows[l] to
/// ldmatrix.x{matrices}{.trans}; r[matrices l + j] back.
std::vector<uint32_t> ldmatrix(int matrices, bool trans, const std::vector<uint16_t>& image,
                               const std::vector<int>& rows);

/// cp.async: each of 32 threads copies `bytes` (4, 8, 16; .cg when `global`) from src + bytes t, of which
/// src_bytes are read and the rest zero-filled, in three commit groups (threads t % 3); returns the
/// shared memory after wait_group 2 (group 0 landed) and after wait_group 0.
struct CpAsyncResult {
  std::vector<uint8_t> first_group, all;
};
CpAsyncResult cp_async(int bytes, bool global, int src_bytes, const std::vector<uint8_t>& src);

/// wgmma.mma_async m64nNk16 by one warpgroup, A and B read from `smem` (loaded at shared offset 0)
/// through descriptors of the given start offsets, byte offsets and swizzle spans (0, 32, 64, 128), or
/// A from a_regs[4t..4t+3]; c[(N/2) t ..] are thread t's accumulators. Returns every thread's d.
struct WgmmaCase {
  Elem elem = Elem::bf16;
  int n = 8;
  bool a_in_regs = false, a_mn_major = false, b_mn_major = false, accumulate = true;
  uint32_t a_start = 0, a_lbo = 0, a_sbo = 0, b_start = 0, b_lbo = 0, b_sbo = 0;
  int a_swizzle = 0, b_swizzle = 0;
  std::vector<uint8_t> smem;
  std::vector<uint32_t> a_regs;
  std::vector<float> c;
};
std::vector<float> wgmma(const WgmmaCase& w);
/// The N values wgmma() is instantiated for.
std::vector<int> wgmma_shapes();

/// A row-major tensor (dims[0] innermost) of 2-byte (bf16) or 4-byte (f32) elements and a TMA box.
struct TmaCase {
  int elem_bytes = 2;
  std::vector<uint64_t> dims;
  std::vector<uint32_t> box;
  std::vector<int32_t> coords;
  int swizzle = 0;  // bytes: 0, 32, 64, 128
  std::vector<uint8_t> tensor;
};
/// The shared memory (box bytes) after a TMA load completed on an mbarrier.
std::vector<uint8_t> tma_load(const TmaCase& t);
/// The tensor after a TMA store (or reduce-add) of `box_image` (shared-memory bytes of the box).
std::vector<uint8_t> tma_store(const TmaCase& t, const std::vector<uint8_t>& box_image, bool reduce_add);

/// A warp-specialised kernel of 384 threads: a producer warpgroup (setmaxnreg.dec, elect.sync) loads
/// 16x32 f32 tiles of `tiles` by TMA into a ring of `stages` buffers (mbarriers full/empty), two consumer
/// warpgroups (setmaxnreg.inc) sum each tile, combining through named barriers. The sums come back.
std::vector<float> pipeline(const std::vector<float>& tiles, int stages);

/// Whether the build holds sm_90a code for the probes (on a GPU the Hopper probes trap without it).
bool has_sm90a();

}  // namespace moe::ptx_probe
