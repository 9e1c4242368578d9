// CUDA emulator (emu/README.md): Ampere's warp-level tensor-core instructions, with the register
// layouts of the PTX ISA (9.7.14.5.8, mma.m16n8k16 with .bf16/.f16; 9.7.14.5.15, ldmatrix). With
// g = lane / 4 and t = lane % 4:
//   A (16x16, row): a[r] holds A[g + 8 (r % 2)][2t + 8 (r / 2) + {0,1}]
//   B (16x8, col):  b[r] holds B[2t + 8r + {0,1}][g]
//   C, D (16x8):    c[i] is C[g + 8 (i / 2)][2t + i % 2]
//   ldmatrix: lanes 8j .. 8j+7 address the rows of matrix j; r[j] of lane l holds row l / 4, columns
//   2 (l % 4) + {0,1} (.trans: rows 2 (l % 4) + {0,1} of column l / 4).
// The lower 16 bits of a register hold the element of lower index. Products of 16-bit values are exact
// in f32 and are added in k order. Also cp.async with a source size, the shared-window address and
// elect.sync. Covered by tests/gpu/ptx_instructions_parity_test.cpp (layout tables written from the
// PTX ISA) and tests/emu/async_checker_test.cpp (misuse).
#include <cstring>

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "moe_emu/runtime.h"
#include "warp_collective.h"

namespace moe_emu {
namespace {
#define MOE_EMU_PC reinterpret_cast<uintptr_t>(__builtin_return_address(0))

float element(MmaType type, uint32_t reg, int half) {
  const auto bits = uint16_t(reg >> (16 * half));
  return type == MmaType::bf16 ? bf16_bits_to_float(bits) : half_bits_to_float(bits);
}
}  // namespace

void complete_mma_sync(Collective& c) {
  const auto type = MmaType(c.values[0]);
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < kWarpSize; ++l) {
    const int g = l / 4, t = l % 4;
    const auto* a = static_cast<const uint32_t*>(c.mma_in[l][0]);
    const auto* b = static_cast<const uint32_t*>(c.mma_in[l][1]);
    const auto* acc = static_cast<const float*>(c.mma_in[l][2]);
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) A[g + 8 * (r % 2)][2 * t + 8 * (r / 2) + h] = element(type, a[r], h);
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) B[2 * t + 8 * r + h][g] = element(type, b[r], h);
    for (int i = 0; i < 4; ++i) C[g + 8 * (i / 2)][2 * t + i % 2] = acc[i];
  }
  for (int l = 0; l < kWarpSize; ++l) {  // every input is read above, so d may be c
    const int g = l / 4, t = l % 4;
    auto* d = static_cast<float*>(c.mma_out[l]);
    for (int i = 0; i < 4; ++i) {
      const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
      float sum = C[row][col];
      for (int k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
      d[i] = sum;
    }
  }
}

void complete_ldmatrix(Collective& c) {
  const int matrices = int(c.values[0] >> 1);
  const bool trans = c.values[0] & 1;
  for (int l = 0; l < kWarpSize; ++l) {
    auto* r = static_cast<uint32_t*>(c.mma_out[l]);
    for (int j = 0; j < matrices; ++j) {
      if (!trans) {
        std::memcpy(&r[j], c.rows[8 * j + l / 4] + 4 * (l % 4), 4);
        continue;
      }
      uint16_t lo, hi;
      std::memcpy(&lo, c.rows[8 * j + 2 * (l % 4)] + 2 * (l / 4), 2);
      std::memcpy(&hi, c.rows[8 * j + 2 * (l % 4) + 1] + 2 * (l / 4), 2);
      r[j] = uint32_t(lo) | uint32_t(hi) << 16;
    }
  }
}

void mma_m16n8k16(MmaType type, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
  const void* in[3] = {a, b, c};
  collective(CollectiveKind::mma_sync, 0xffffffffu, uint64_t(type), MOE_EMU_PC, Shuffle::index, in, d);
}

void ldmatrix(int matrices, bool trans, uint32_t* dst, const void* row) {
  const uintptr_t pc = MOE_EMU_PC;
  ThreadState& t = current_thread();
  if (matrices != 1 && matrices != 2 && matrices != 4)
    report(t, ReportKind::warp_misuse, pc, "ldmatrix of " + std::to_string(matrices) + " matrices (.x1, .x2 or .x4)",
           true);
  uint8_t bytes[16] = {};
  if (t.lane < 8 * matrices) {  // only these lanes' addresses are used
    const auto a = reinterpret_cast<uintptr_t>(row);
    if (!in_arena(*t.worker, a))
      report(t, ReportKind::out_of_bounds, pc,
             "ldmatrix row address of lane " + std::to_string(t.lane) +
                 " is not in shared memory (ldmatrix reads .shared only)",
             true, a);
    if (a % 16)
      report(t, ReportKind::misaligned, pc,
             "ldmatrix row address of lane " + std::to_string(t.lane) + " is not 16-byte aligned", true, a);
    check_access(t, a, 16, false, pc, false, true);
    std::memcpy(bytes, row, 16);
  }
  collective(CollectiveKind::ldmatrix, 0xffffffffu, uint64_t(matrices * 2 + (trans ? 1 : 0)), pc, Shuffle::index,
             nullptr, dst, bytes);
}

void cp_async(void* dst_shared, const void* src_global, unsigned bytes, unsigned src_bytes, bool cache_global) {
  const uintptr_t pc = MOE_EMU_PC;
  ThreadState& t = current_thread();
  if (cache_global && bytes != 16)
    report(t, ReportKind::async_in_flight, pc, "cp.async.cg copies 16 bytes, not " + std::to_string(bytes), true);
  if (src_bytes > bytes)
    report(t, ReportKind::async_in_flight, pc,
           "cp.async source size " + std::to_string(src_bytes) + " exceeds the copy size " + std::to_string(bytes),
           true);
  queue_async_copy(t, dst_shared, src_global, bytes, bytes - src_bytes, pc);
}

uint32_t shared_address(const void* p) {
  ThreadState& t = current_thread();
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (!in_arena(*t.worker, a))
    report(t, ReportKind::out_of_bounds, MOE_EMU_PC, "__cvta_generic_to_shared of an address outside shared memory",
           true, a);
  return uint32_t(a - reinterpret_cast<uintptr_t>(t.worker->arena));
}

bool elect_sync(unsigned mask) { return collective(CollectiveKind::elect, mask, 0, MOE_EMU_PC) != 0; }

}  // namespace moe_emu
