// What the flat routers whose tokens pick experts through one linear gate share (switch, loss_free,
// expert_choice): their checks and their gate W_g [d, n] ~ N(0, 0.1 / d). Covered by
// tests/layers/moe_router_test.cpp and tests/layers/moe_router_loss_free_test.cpp.
#pragma once
#include <string>

#include "layers/builder.h"

namespace moe {
struct MoeOptions;  // moe_ffn.h

/// groups <= 1 and k in [1, experts]; errors name the router (model.ffn.gating) and the key.
void validate_flat_topk(const MoeOptions& o, const std::string& router);
/// The linear gate "gate.w" [d, n], drawn from N(0, 0.1 / d), in `gate_dtype`.
Expr declare_linear_gate(const Builder& b, const MoeOptions& o, DType gate_dtype);
}  // namespace moe
