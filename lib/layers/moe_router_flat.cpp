// moe_router_flat.h implementation. Covered by tests/layers/moe_router_test.cpp.
#include "layers/moe_router_flat.h"

#include <cmath>

#include "graph/expr/cast.h"
#include "layers/moe_ffn.h"

namespace moe {

void validate_flat_topk(const MoeOptions& o, const std::string& router) {
  MOE_CHECK(o.groups <= 1, "moe: gating ", router, " is flat: groups ", o.groups, " needs gating noisy_topk");
  MOE_CHECK(o.k >= 1 && o.k <= o.experts, "moe: k = ", o.k, " must be in [1, experts = ", o.experts, "]");
}

Expr declare_linear_gate(const Builder& b, const MoeOptions& o, DType gate_dtype) {
  const double std = std::sqrt(0.1 / static_cast<double>(o.dim));
  return cast(b.param("gate.w", Shape{o.dim, o.experts}, Init::normal(0, std)), gate_dtype);
}

}  // namespace moe
