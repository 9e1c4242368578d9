// Tests that run an op under each of its kernel variants (ops/kernel_variants.h): ForceKernel forces
// one for its scope, as MOE_KERNEL=op:variant does, and puts the previous choice back.
#pragma once
#include <optional>

#include "ops/kernel_variants.h"

namespace moe::test {

class ForceKernel {
 public:
  explicit ForceKernel(const KernelVariant& v) : op_(v.op), previous_(force_kernel_variant(v.op, v.impl)) {}
  ~ForceKernel() { force_kernel_variant(op_, previous_); }
  ForceKernel(const ForceKernel&) = delete;
  ForceKernel& operator=(const ForceKernel&) = delete;

 private:
  KernelOp op_;
  std::optional<KernelImpl> previous_;
};

}  // namespace moe::test
