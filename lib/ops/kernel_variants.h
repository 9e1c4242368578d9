// The kernel variant table: for every op with more than one CUDA kernel, which variant runs for which
// architecture and dtype, in one place. Variants are listed best first; an op runs the first one that
// takes its dtype on the device's architecture (compute capability, and the sm_90a build for wgmma/TMA
// ones). MOE_KERNEL=op:variant[,op:variant] (or force_kernel_variant) forces one, e.g.
// MOE_KERNEL=grouped_gemm:wmma; forcing one that cannot take the dtype is an error naming both. The
// table also says which tensor-core instructions each variant's kernels must hold in SASS (HMMA for
// wmma and mma.sync, HGMMA for wgmma), which scripts/internal/kernel-sass.sh checks in CI, and the
// parity suite runs every variant (the emulator runs sm_90a ones whatever the host).
// Covered by tests/ops/kernel_variants_test.cpp and every parity test that loops over variants.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "common/named_enum.h"
#include "tensor/dtype.h"

namespace moe {

MOE_NAMED_ENUM(KernelOp, attention_forward, attention_backward, grouped_gemm);
/// The instruction family a variant is built on (and the SASS it must hold: none, HMMA, HMMA, HGMMA).
MOE_NAMED_ENUM(KernelImpl, simt, wmma, mma, wgmma);

/// What a call's operands allow beyond their dtype, as its dispatch sees them.
struct KernelShape {
  // Every operand can move by TMA (16-byte aligned, strides multiples of 16 bytes) and the call is one the
  // op's TMA variants take (attention forward and backward: head size 64 or 128, no attention dropout).
  bool tma = true;
};

struct KernelVariant {
  KernelOp op;
  KernelImpl impl;
  int min_sm;        // compute capability 10 major + minor
  bool needs_sm90a;  // wgmma / TMA: only an sm_90a build has them
  bool needs_tma;    // takes only calls whose KernelShape allows TMA
  std::vector<DType> dtypes;
  std::vector<std::string> kernels;  // the __global__ functions it launches (unqualified names)
  std::string shapes;                // what it takes and how it works, for --list-variants and the docs

  std::string name() const { return enum_name(op) + ":" + enum_name(impl); }
  bool takes(DType dtype) const;
  /// The SASS instruction class its kernels must contain: "HMMA", "HGMMA" or "" (none of them).
  std::string sass() const;
};

/// Every variant, grouped by op, best first.
const std::vector<KernelVariant>& kernel_variants();
/// The variants of one op that take `dtype`.
std::vector<const KernelVariant*> kernel_variants(KernelOp op, DType dtype);
/// The variant `op` runs for `dtype` on a device of compute capability `sm` for a call of `shape` (the
/// forced one, if any; forcing one the call does not fit is an error).
const KernelVariant& choose_kernel(KernelOp op, DType dtype, int sm, KernelShape shape = {});
/// Forces (or with nullopt, releases) the variant of `op`, as MOE_KERNEL does; returns the previous.
std::optional<KernelImpl> force_kernel_variant(KernelOp op, std::optional<KernelImpl> impl);
/// Parses MOE_KERNEL's text ("grouped_gemm:mma,attention_forward:simt"); errors name the entry.
std::vector<std::pair<KernelOp, KernelImpl>> parse_kernel_overrides(const std::string& text);

}  // namespace moe
