// moe_router.h implementation: the router registry. Covered by tests/layers/moe_router_test.cpp.
#include "layers/moe_router.h"

#include "layers/moe_ffn.h"

namespace moe {

double MoeRouter::active(const MoeOptions& o) const { return o.k; }

RouterRegistry& RouterRegistry::instance() {
  static RouterRegistry* registry = [] {
    auto* r = new RouterRegistry();
    register_builtin_routers(*r);
    return r;
  }();
  return *registry;
}

void RouterRegistry::add(RouterFamily family) {
  for (const RouterFamily& f : families_)
    MOE_CHECK(f.name != family.name, "router '", family.name, "' registered twice");
  families_.push_back(std::move(family));
}

const RouterFamily& RouterRegistry::family(const std::string& name, const std::string& key) const {
  for (const RouterFamily& f : families_)
    if (f.name == name) return f;
  MOE_FAIL(key, ": unknown router '", name, "' (known: ", names(), ")");
}

std::string RouterRegistry::names() const {
  std::string out;
  for (const RouterFamily& f : families_) out += (out.empty() ? "" : " | ") + f.name;
  return out;
}

std::shared_ptr<const MoeRouter> moe_router(const std::string& name) {
  return RouterRegistry::instance().family(name, "moe_router").make(YAML::Node(YAML::NodeType::Map), "model.ffn");
}

}  // namespace moe
