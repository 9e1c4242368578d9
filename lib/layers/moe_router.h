// The routers of the MoE layer (moe_ffn.h), each registered by its name, the recipe's `gating`: a router
// declares its own parameters, reads its own recipe keys, and turns the layer's rows into a Routing (which
// expert takes which token with which weight) plus what it knows about itself: the balancing statistics
// and aux losses it adds, its logits (the router z-loss), how a token's routing depends on the other
// tokens of the batch (RoutingScope, for the causality checks) and whether tokens pick experts (a token
// capacity then applies, moe_capacity.h) or experts pick tokens. The layer does the rest: dispatch,
// capacity, shared experts, z-loss, expert parallelism, the gate recorder.
// A new router is its own file (a MoeRouter, and a function returning its RouterFamily) and its two lines
// in layers/builtin_routers.cpp (the function's declaration and its registration), which lists the routers;
// docs/CONTRIBUTING.md walks through it. Covered by tests/layers/moe_router_test.cpp and each router's tests.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/keys.h"
#include "layers/builder.h"
#include "layers/moe_ffn_gating.h"
#include "layers/sites.h"

namespace moe {

struct MoeOptions;  // moe_ffn.h

/// A router's parameters and states by leaf under the layer's prefix ("gate.w", "gate.noise_w",
/// "gate2.w", "gate2.noise_w", "gate.thresholds", "gate.bias", ...), in the gate dtype.
using RouterWeights = std::map<std::string, Expr>;

/// What a router reads besides the rows and its weights.
struct RouterContext {
  bool training = false;
  GateNoise noise, noise2;             // noisy routers: the primary and secondary noise streams
  Shape lead;                          // the rows' leading shape ([B, T], or [N] for rows of no sequence)
  Tensor padding;                      // [lead], nonzero at real tokens (RouterTraits::reads_padding); may be undefined
  dist::Communicator* comm = nullptr;  // several ranks: statistics over the global batch
};

/// A weighted auxiliary loss the layer registers as "<site>.<leaf>" (training only).
struct AuxTerm {
  std::string leaf;
  Expr value;
};

struct RouterResult {
  Routing routing;
  Expr importance, load;        // [n]: the 2017 losses' statistics (w_importance, w_load), or undefined
  std::vector<Expr> logits;     // [rows, experts] router logits, for the z-loss
  std::vector<AuxTerm> losses;  // the router's own losses, weighted (training only)
};

struct RouterTraits {
  RoutingScope training = RoutingScope::token, inference = RoutingScope::token;
  /// Tokens pick experts, assignment a being slot a % per_token of token a / per_token in token order
  /// (a token capacity can then drop assignments); false: experts pick tokens (Routing::token).
  bool token_choice = true;
  bool reads_padding = false;  // route() reads RouterContext::padding
  int max_per_token = 0;       // a token's gate has at most this many nonzeros (0: no such bound)
};

class MoeRouter {
 public:
  virtual ~MoeRouter() = default;
  /// Its model.ffn.gating.
  virtual const std::string& name() const = 0;
  /// The policy the gate recorder reports (default: the name).
  virtual std::string policy(const MoeOptions&) const { return name(); }
  virtual RouterTraits traits(const MoeOptions& o) const = 0;
  /// Routed experts per token (on average).
  virtual double active(const MoeOptions& o) const;
  /// Checks across keys; errors name the key and value.
  virtual void validate(const MoeOptions& o) const = 0;
  /// Declares the router's parameters and states under `b` (the order is the checkpoints' layout).
  virtual RouterWeights declare(const Builder& b, const MoeOptions& o, DType gate_dtype) const = 0;
  /// Draws the graph's random streams the routing needs (before route(); default: none).
  virtual void draw_noise(Graph&, const MoeOptions&, bool /*training*/, RouterContext&) const {}
  /// Routes the rows xg [R, d] (gate dtype).
  virtual RouterResult route(const Expr& xg, const RouterWeights& w, const MoeOptions& o,
                             const RouterContext& c) const = 0;
};

/// A router by name with its own recipe keys (under the MoE options' section, beside the common ones).
struct RouterFamily {
  std::string name;  // model.ffn.gating
  std::string help;  // one line for --help
  std::vector<std::string> keys;
  /// Its keys into `schema` under `section` (--help).
  std::function<void(config::Schema& schema, const std::string& section)> declare_keys;
  /// The router with its keys read from `options` (only its own keys are passed; errors name `section.key`).
  std::function<std::shared_ptr<const MoeRouter>(const YAML::Node& options, const std::string& section)> make;
};

/// A family whose keys fill the struct `Options` (via `keys()`) and whose router is `Router(Options)`.
template <class Options, class Router>
RouterFamily router_family(std::string name, std::string help, const config::Keys<Options>& (*keys)()) {
  RouterFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.keys = keys().names();
  f.declare_keys = [keys](config::Schema& s, const std::string& section) { keys().declare(s, section); };
  f.make = [keys](const YAML::Node& options, const std::string& section) -> std::shared_ptr<const MoeRouter> {
    Options o;
    keys().read(options, o, section);
    return std::make_shared<Router>(o);
  };
  return f;
}

class RouterRegistry {
 public:
  /// The registry with the built-in routers (layers/builtin_routers.cpp).
  static RouterRegistry& instance();
  void add(RouterFamily family);
  /// The family called `name`; an unknown name is an error naming `key` and the known ones.
  const RouterFamily& family(const std::string& name, const std::string& key) const;
  const std::vector<RouterFamily>& families() const { return families_; }
  /// "noisy_topk | batchwise | ...".
  std::string names() const;

 private:
  std::vector<RouterFamily> families_;
};

/// The router `name` with its keys at their defaults (tests and code that build MoeOptions by hand).
std::shared_ptr<const MoeRouter> moe_router(const std::string& name);

/// The built-in routers (builtin_routers.cpp, which declares their families).
void register_builtin_routers(RouterRegistry& registry);

}  // namespace moe
