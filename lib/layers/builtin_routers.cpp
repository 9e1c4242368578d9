// The built-in MoE routers (model.ffn.gating): each router's family function, defined in its own file
// (moe_router_<name>.cpp), and its registration line. A new router adds its file and its two lines here.
// Covered by tests/layers/moe_router_test.cpp.
#include "layers/moe_router.h"

namespace moe {

RouterFamily noisy_topk_router();     // moe_router_topk.cpp
RouterFamily batchwise_router();      // moe_router_batchwise.cpp
RouterFamily switch_router();         // moe_router_switch.cpp
RouterFamily expert_choice_router();  // moe_router_expert_choice.cpp
RouterFamily loss_free_router();      // moe_router_loss_free.cpp

void register_builtin_routers(RouterRegistry& r) {
  r.add(noisy_topk_router());
  r.add(batchwise_router());
  r.add(switch_router());
  r.add(expert_choice_router());
  r.add(loss_free_router());
}

}  // namespace moe
