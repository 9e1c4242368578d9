// kernel_variants.h: the table, the choice and the MOE_KERNEL override. Covered by
// tests/ops/kernel_variants_test.cpp.
#include "ops/kernel_variants.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "common/error.h"
#include "tensor/cuda_runtime.h"

namespace moe {
namespace {
const std::vector<DType> kSixteenBit = {DType::bf16, DType::f16};

std::mutex& override_mutex() {
  static std::mutex m;
  return m;
}
/// The forced variant of each op: MOE_KERNEL at first use, then force_kernel_variant.
std::vector<std::optional<KernelImpl>>& overrides() {
  static std::vector<std::optional<KernelImpl>> o = [] {
    std::vector<std::optional<KernelImpl>> r(enum_names(KernelOp{}).size());
    if (const char* env = std::getenv("MOE_KERNEL"))
      for (const auto& [op, impl] : parse_kernel_overrides(env)) r[size_t(op)] = impl;
    return r;
  }();
  return o;
}
}  // namespace

bool KernelVariant::takes(DType dtype) const { return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end(); }

std::string KernelVariant::sass() const {
  switch (impl) {
    case KernelImpl::wmma:
    case KernelImpl::mma:
      return "HMMA";
    case KernelImpl::wgmma:
      return "HGMMA";
    case KernelImpl::simt:
      break;
  }
  return "";
}

const std::vector<KernelVariant>& kernel_variants() {
  // Best first within each op: op, instruction family, compute capability, sm_90a build, TMA operands,
  // dtypes, kernels, what it takes and how it works.
  // clang-format off
  static const std::vector<KernelVariant> table = {
      {KernelOp::attention_forward, KernelImpl::wgmma, 90, true, true, kSixteenBit, {"attention_fwd_wgmma_kernel"},
       "FlashAttention-3: 128 query rows per block, a TMA producer warp loading K and V into a 2-3 stage "
       "mbarrier ring, two consumer warpgroups of 64 rows taking turns (ping-pong) with S = QK^T by wgmma "
       "m64n128k16 from shared memory, the online softmax in registers overlapping the previous tile's "
       "O += PV (P the register A operand); head dim 64 and 128, no dropout, operands TMA can move (else mma)"},
      {KernelOp::attention_forward, KernelImpl::mma, 80, false, false, kSixteenBit, {"attention_fwd_mma_kernel"},
       "FlashAttention-2: 4 warps of 16 query rows, mma.sync m16n8k16 with S, P and O in registers, "
       "K/V through a 2-3 stage cp.async pipeline, masks only on the tiles that need them; head dim "
       "32/64/128/256 (padded up)"},
      {KernelOp::attention_forward, KernelImpl::wmma, 80, false, false, kSixteenBit, {"attention_fwd_tc_kernel"},
       "head dim 32/64/128/256 (padded up); 64-query tiles, scores through shared memory"},
      {KernelOp::attention_forward, KernelImpl::simt, 0, false, false, {DType::f32}, {"attention_fwd_kernel"},
       "f32 reference path: FMA tiles, any head dim"},
      {KernelOp::attention_backward, KernelImpl::wgmma, 90, true, true, kSixteenBit, {"attention_bwd_wgmma_kernel"},
       "FlashAttention-3: 128 keys per block in two consumer warpgroups of 64 holding dK and dV, a TMA "
       "producer warp loading Q and dO into a 2-stage mbarrier ring, S^T and dP^T by wgmma m64n64k16 from "
       "shared memory, dV and dK with P and dS as register A operands, dQ through shared memory and a TMA "
       "reduce-add that the last key block converts; head dim 64 and 128, no dropout, operands TMA can move "
       "(else mma)"},
      {KernelOp::attention_backward, KernelImpl::mma, 80, false, false, kSixteenBit, {"attention_bwd_mma_kernel"},
       "FlashAttention-2: key tiles with dK/dV in registers, mma.sync m16n8k16, dQ from the dS "
       "accumulators by f32 atomics that the last key tile adds into dq; head dim 32/64/128/256"},
      {KernelOp::attention_backward, KernelImpl::wmma, 80, false, false, kSixteenBit, {"attention_bwd_tc_kernel"},
       "head dim 32/64/128/256 (padded up); dQ by f32 atomics"},
      {KernelOp::attention_backward, KernelImpl::simt, 0, false, false, {DType::f32}, {"attention_bwd_kernel"},
       "f32 reference path"},
      {KernelOp::grouped_gemm, KernelImpl::mma, 80, false, false, kSixteenBit, {"grouped_mma_kernel"},
       "128x128x32 tiles of mma.sync m16n8k16 fed by ldmatrix (.trans for a transposed operand) from a "
       "3-stage cp.async pipeline; any strides (scalar loads where 16-byte vectors do not fit)"},
      // After mma until a GPU measures it faster (docs/PERF.md); MOE_KERNEL=grouped_gemm:wgmma runs it.
      {KernelOp::grouped_gemm, KernelImpl::wgmma, 90, true, true, kSixteenBit, {"grouped_wgmma_kernel"},
       "persistent, warp-specialised: a TMA producer warp and two wgmma m64n128k16 consumer warpgroups over "
       "a 4-stage mbarrier ring of 128x64 tiles, the tile schedule built on the device from the offsets"},
      {KernelOp::grouped_gemm, KernelImpl::wmma, 80, false, false, kSixteenBit, {"grouped_wmma_kernel"},
       "128x128x32 wmma tiles, 2-stage cp.async (a transposed operand through registers)"},
      {KernelOp::grouped_gemm, KernelImpl::simt, 0, false, false, {DType::f32}, {"grouped_fma_kernel"},
       "f32: 64x64x16 FMA tiles"},
  };
  // clang-format on
  return table;
}

std::vector<const KernelVariant*> kernel_variants(KernelOp op, DType dtype) {
  std::vector<const KernelVariant*> out;
  for (const KernelVariant& v : kernel_variants())
    if (v.op == op && v.takes(dtype)) out.push_back(&v);
  return out;
}

const KernelVariant& choose_kernel(KernelOp op, DType dtype, int sm, KernelShape shape) {
  std::optional<KernelImpl> forced;
  {
    std::lock_guard<std::mutex> lock(override_mutex());
    forced = overrides()[size_t(op)];
  }
  for (const KernelVariant& v : kernel_variants()) {
    if (v.op != op || (forced && v.impl != *forced)) continue;
    const bool fits = v.takes(dtype) && sm >= v.min_sm && (!v.needs_sm90a || (sm == 90 && cuda::has_sm90a_code()));
    if (fits && (!v.needs_tma || shape.tma)) return v;
    MOE_CHECK(!forced || !fits, "MOE_KERNEL forces ", v.name(),
              ", which takes only calls whose operands move by TMA (16-byte aligned, strides multiples of 16 "
              "bytes) and whose shapes it takes (",
              v.shapes, "); this call's do not");
    MOE_CHECK(!forced, "MOE_KERNEL forces ", v.name(), ", which does not run ", dtype_name(dtype),
              " on compute "
              "capability ",
              sm / 10, ".", sm % 10, " (it takes ",
              v.dtypes.size() == 1 ? dtype_name(v.dtypes[0]) : std::string("bf16 and f16"), " from ", v.min_sm / 10,
              ".", v.min_sm % 10, ")");
  }
  MOE_CHECK(!forced, "MOE_KERNEL forces ", enum_name(op), ":", enum_name(*forced), ", which is not a variant of ",
            enum_name(op), " (kernel variants: moe-bench --list-variants)");
  MOE_FAIL(enum_name(op), ": no kernel variant runs ", dtype_name(dtype), " on compute capability ", sm / 10, ".",
           sm % 10);
}

std::optional<KernelImpl> force_kernel_variant(KernelOp op, std::optional<KernelImpl> impl) {
  std::lock_guard<std::mutex> lock(override_mutex());
  std::optional<KernelImpl> previous = overrides()[size_t(op)];
  overrides()[size_t(op)] = impl;
  return previous;
}

std::vector<std::pair<KernelOp, KernelImpl>> parse_kernel_overrides(const std::string& text) {
  std::vector<std::pair<KernelOp, KernelImpl>> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string entry = text.substr(begin, end - begin);
    begin = end + 1;
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    MOE_CHECK(colon != std::string::npos, "MOE_KERNEL: '", entry, "' is not op:variant (e.g. grouped_gemm:wmma)");
    out.emplace_back(
        parse_enum<KernelOp>(entry.substr(0, colon), "MOE_KERNEL op"),
        parse_enum<KernelImpl>(entry.substr(colon + 1), "MOE_KERNEL variant of " + entry.substr(0, colon)));
  }
  return out;
}

}  // namespace moe
