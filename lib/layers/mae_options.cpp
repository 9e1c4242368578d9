// MaeOptions (mae.h): the recipe keys of attention type mae, the name shorthand and the gate-input
// presets. Paper defaults (MODELS.md §0): MAE-7, learned gate, 256 tanh units, dropout 0.1. Gate
// inputs default to the preset leak_free (issue 16): encoder sites average the whole source
// (full_mean), decoder sites the causal prefix (causal_prefix_mean), LM sites the most recent 100
// positions (causal_window_mean); the preset paper averages the whole target at decoder sites too.
// Gate norms (issue 14) default to leak_free too: BatchNorm with batch statistics (the paper's) at
// encoder sites, running statistics at the causal sites (decoder self and cross, LM), whose batch
// statistics in training would mix every position of the batch into each gate.
// Covered by tests/layers/mae_test.cpp ("options"), tests/layers/mae_causality_test.cpp and
// tests/models/causality_test.cpp (gate norms).
#include <functional>
#include <regex>
#include <set>

#include "layers/mae.h"

namespace moe {

namespace {
const std::set<std::string> kPolicies = {"full_mean", "causal_prefix_mean", "causal_window_mean", "source_mean"};

std::map<std::string, std::string> preset(const std::string& name) {
  if (name == "paper")
    return {{kEncoderSelf, "full_mean"},
            {kDecoderSelf, "full_mean"},
            {kDecoderCross, "full_mean"},
            {kLmSelf, "causal_window_mean"}};
  if (name == "leak_free")
    return {{kEncoderSelf, "full_mean"},
            {kDecoderSelf, "causal_prefix_mean"},
            {kDecoderCross, "causal_prefix_mean"},
            {kLmSelf, "causal_window_mean"}};
  MOE_FAIL("model.attention.gate_input: '", name, "' is neither a preset (paper, leak_free) nor a map role -> policy");
}

const std::set<std::string> kNorms = {"batch", "running", "none"};

std::map<std::string, std::string> norm_preset(const std::string& name) {
  if (kNorms.count(name))
    return {{kEncoderSelf, name}, {kDecoderSelf, name}, {kDecoderCross, name}, {kLmSelf, name}};
  if (name == "leak_free")
    return {{kEncoderSelf, "batch"}, {kDecoderSelf, "running"}, {kDecoderCross, "running"}, {kLmSelf, "running"}};
  MOE_FAIL("model.attention.gate_norm: '", name,
           "' is neither batch, running, none, the preset leak_free nor a map role -> norm");
}

/// A preset name or a map role -> value over `out` (gate_input, gate_norm); errors name the key.
void read_roles(const YAML::Node& node, const std::string& key,
                const std::function<std::map<std::string, std::string>(const std::string&)>& preset_of,
                std::map<std::string, std::string>& out) {
  const YAML::Node v = node[key];
  if (v && v.IsScalar())
    out = preset_of(v.as<std::string>());
  else if (v && v.IsMap())
    for (const auto& kv : v) {
      const std::string role = kv.first.as<std::string>();
      MOE_CHECK(out.count(role), "model.attention.", key, ": unknown site '", role,
                "' (known: encoder_self, decoder_self, decoder_cross, lm_self)");
      MOE_CHECK(kv.second.IsScalar(), "model.attention.", key, ".", role, ": expected a name, got '",
                YAML::Dump(kv.second), "'");
      out[role] = kv.second.as<std::string>();
    }
  else if (v)
    MOE_FAIL("model.attention.", key, ": expected a preset name or a map, got '", YAML::Dump(v), "'");
}

/// node[key] as T into `out` when present; a value of the wrong type is an error naming the key.
template <class T>
bool take(const YAML::Node& node, const std::string& key, T& out) {
  const YAML::Node v = node[key];
  if (!v) return false;
  try {
    out = v.as<T>();
  } catch (const YAML::Exception&) {
    MOE_FAIL("model.attention.", key, " (mae): cannot read '", YAML::Dump(v), "'");
  }
  return true;
}

/// Parses a name into (dropped, gate, training); the number must be h-1 or h-2.
void parse_name(const std::string& nm, int heads, MaeOptions& o) {
  std::smatch m;
  const bool mae = std::regex_match(nm, m, std::regex("(UNI-)?MAE(-([0-9]+))?"));
  const bool nobcd = !mae && std::regex_match(nm, m, std::regex("NOBCD(-([0-9]+))?"));
  MOE_CHECK(mae || nobcd, "model.attention.name: '", nm, "' is not MAE-<n>, UNI-MAE-<n> or NOBCD-<n> (n = h-1 or h-2)");
  const std::string number = mae ? m[3].str() : m[2].str();
  if (!number.empty()) {
    const int n = std::stoi(number);
    MOE_CHECK(n == heads - 1 || n == heads - 2, "model.attention.name: '", nm, "' mixes experts of ", n,
              " heads, but with heads = ", heads, " only MAE-", heads - 1, " and MAE-", heads - 2, " exist");
    o.dropped = heads - n;
  }
  if (mae && m[1].matched) o.gate = "uniform";
  if (nobcd) o.training = "joint";
}
}  // namespace

MaeOptions MaeOptions::from_yaml(const YAML::Node& node, int heads) {
  static const std::set<std::string> known = {"type",        "name",         "experts",     "gate",      "training",
                                              "gate_hidden", "gate_dropout", "gate_window", "gate_input",
                                              "gate_norm"};
  MaeOptions o;
  o.heads = heads;
  o.gate_input = preset(kDefaultGateInput);
  o.gate_norm = norm_preset(kDefaultGateInput);
  if (node && node.IsMap()) {
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      MOE_CHECK(known.count(key), "unknown option 'model.attention.", key, "' for attention type mae");
    }
    std::string name;
    if (take(node, "name", name)) parse_name(name, heads, o);
    const MaeOptions named = o;
    std::string experts;
    if (take(node, "experts", experts)) {
      MOE_CHECK(experts == "h-1" || experts == "h-2", "model.attention.experts (mae): '", experts,
                "' is not h-1 or h-2");
      o.dropped = experts == "h-1" ? 1 : 2;
    }
    take(node, "gate", o.gate);
    take(node, "training", o.training);
    if (!name.empty())
      MOE_CHECK(o.dropped == named.dropped && o.gate == named.gate && o.training == named.training,
                "model.attention: name ", name, " disagrees with experts/gate/training = h-", o.dropped, "/", o.gate,
                "/", o.training);
    take(node, "gate_hidden", o.gate_hidden);
    take(node, "gate_dropout", o.gate_dropout);
    take(node, "gate_window", o.gate_window);
    read_roles(node, "gate_input", preset, o.gate_input);
    read_roles(node, "gate_norm", norm_preset, o.gate_norm);
  }
  MOE_CHECK(heads >= o.dropped + 1, "model.attention (mae): MAE-(h-", o.dropped, ") needs more than ", o.dropped,
            " heads, model.heads = ", heads);
  MOE_CHECK(o.gate == "learned" || o.gate == "uniform", "model.attention.gate (mae): '", o.gate,
            "' is not learned or uniform");
  MOE_CHECK(o.training == "bcd" || o.training == "joint", "model.attention.training (mae): '", o.training,
            "' is not bcd or joint");
  MOE_CHECK(o.gate == "learned" || o.training == "bcd", "model.attention (mae): a uniform gate has nothing to train ",
            "jointly (training: joint needs gate: learned)");
  MOE_CHECK(o.gate_hidden >= 1 && o.gate_window >= 1, "model.attention (mae): gate_hidden ", o.gate_hidden,
            " and gate_window ", o.gate_window, " must be >= 1");
  MOE_CHECK(o.gate_dropout >= 0.f && o.gate_dropout < 1.f, "model.attention.gate_dropout (mae): ", o.gate_dropout,
            " is not in [0, 1)");
  for (const auto& [role, policy] : o.gate_input) {
    MOE_CHECK(kPolicies.count(policy), "model.attention.gate_input.", role, ": unknown policy '", policy,
              "' (known: full_mean, causal_prefix_mean, causal_window_mean, source_mean)");
    MOE_CHECK(policy != "source_mean" || role == kDecoderSelf || role == kDecoderCross, "model.attention.gate_input.",
              role, ": source_mean is only for decoder sites (it averages the encoder output)");
  }
  for (const auto& [role, norm] : o.gate_norm)
    MOE_CHECK(kNorms.count(norm), "model.attention.gate_norm.", role, ": unknown norm '", norm,
              "' (known: batch, running, none)");
  return o;
}

void MaeOptions::pin_gate_input(YAML::Node& attention) {
  if (!attention || !attention.IsMap() || !attention["type"] || attention["type"].as<std::string>() != "mae") return;
  // No entry: the default preset; a partial map: completed from it, role by role; a name stays
  // (from_yaml checks it).
  auto pin = [&](const char* key, const std::map<std::string, std::string>& defaults) {
    const YAML::Node v = attention[key];
    if (v && !v.IsMap()) return;
    if (!v) {
      attention[key] = kDefaultGateInput;
      return;
    }
    for (const auto& [role, value] : defaults)
      if (!v[role]) attention[key][role] = value;
  };
  pin("gate_input", preset(kDefaultGateInput));
  pin("gate_norm", norm_preset(kDefaultGateInput));
}

std::string MaeOptions::name() const {
  const std::string n = std::to_string(heads - dropped);
  if (gate == "uniform") return "UNI-MAE-" + n;
  return (training == "joint" ? "NOBCD-" : "MAE-") + n;
}

const std::string& MaeOptions::policy(const std::string& role) const {
  auto it = gate_input.find(role);
  MOE_CHECK(it != gate_input.end(), "mae: unknown site role '", role,
            "' (known: encoder_self, decoder_self, decoder_cross, lm_self)");
  return it->second;
}

const std::string& MaeOptions::norm(const std::string& role) const {
  auto it = gate_norm.find(role);
  MOE_CHECK(it != gate_norm.end(), "mae: unknown site role '", role,
            "' (known: encoder_self, decoder_self, decoder_cross, lm_self)");
  return it->second;
}

}  // namespace moe
