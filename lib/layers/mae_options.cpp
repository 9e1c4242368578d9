// MaeOptions (mae.h): the recipe keys of attention type mae (one key table), the name shorthand and the
// gate-input presets. Paper defaults (docs/MODELS.md §0): MAE-7, learned gate, 256 tanh units, dropout 0.1.
// Gate inputs default to the preset leak_free (issue 16): encoder sites average the whole source
// (full_mean), decoder sites the causal prefix (causal_prefix_mean), LM sites the most recent 100
// positions (causal_window_mean); the preset paper averages the whole target at decoder sites too.
// Gate norms (issue 14) default to leak_free too: BatchNorm with batch statistics (the paper's) at
// encoder sites, running statistics at the causal sites (decoder self and cross, LM), whose batch
// statistics in training would mix every position of the batch into each gate.
// Covered by tests/layers/mae_test.cpp ("options"), tests/layers/mae_causality_test.cpp and
// tests/models/causality_test.cpp (gate norms).
#include <regex>

#include "config/keys.h"
#include "layers/mae.h"

namespace moe {

namespace {
using Roles = std::map<SiteRole, GateInput>;
using Norms = std::map<SiteRole, GateNorm>;

Roles preset(const std::string& name) {
  using R = SiteRole;
  using P = GateInput;
  if (name == "paper")
    return {{R::encoder_self, P::full_mean},
            {R::decoder_self, P::full_mean},
            {R::decoder_cross, P::full_mean},
            {R::lm_self, P::causal_window_mean}};
  if (name == "leak_free")
    return {{R::encoder_self, P::full_mean},
            {R::decoder_self, P::causal_prefix_mean},
            {R::decoder_cross, P::causal_prefix_mean},
            {R::lm_self, P::causal_window_mean}};
  MOE_FAIL("model.attention.gate_input: '", name, "' is neither a preset (paper, leak_free) nor a map role -> policy");
}

Norms norm_preset(const std::string& name) {
  using R = SiteRole;
  if (name == "leak_free")
    return {{R::encoder_self, GateNorm::batch},
            {R::decoder_self, GateNorm::running},
            {R::decoder_cross, GateNorm::running},
            {R::lm_self, GateNorm::running}};
  for (const std::string& n : enum_names(GateNorm{}))
    if (n == name) {
      const GateNorm v = parse_enum<GateNorm>(n, "");
      return {{R::encoder_self, v}, {R::decoder_self, v}, {R::decoder_cross, v}, {R::lm_self, v}};
    }
  MOE_FAIL("model.attention.gate_norm: '", name,
           "' is neither batch, running, none, the preset leak_free nor a map role -> norm");
}

/// A preset name or a map role -> value over `out` (gate_input, gate_norm); errors name the key.
template <class V>
void read_roles(const YAML::Node& v, const std::string& key, std::map<SiteRole, V> (*preset_of)(const std::string&),
                std::map<SiteRole, V>& out) {
  if (v.IsScalar()) {
    out = preset_of(v.Scalar());
    return;
  }
  MOE_CHECK(v.IsMap(), key, ": expected a preset name or a map, got '", YAML::Dump(v), "'");
  for (const auto& kv : v) {
    const SiteRole role = parse_enum<SiteRole>(kv.first.Scalar(), key + " site");
    MOE_CHECK(kv.second.IsScalar(), key, ".", kv.first.Scalar(), ": expected a name, got '", YAML::Dump(kv.second),
              "'");
    out[role] = parse_enum<V>(kv.second.Scalar(), key + "." + kv.first.Scalar());
  }
}

template <class V>
YAML::Node write_roles(const std::map<SiteRole, V>& m) {
  YAML::Node n(YAML::NodeType::Map);
  for (const auto& [role, v] : m) n[enum_name(role)] = enum_name(v);
  return n;
}

/// Parses a name into (dropped, gate, training); the number must be h-1 or h-2.
void parse_name(const std::string& nm, MaeOptions& o) {
  std::smatch m;
  const bool mae = std::regex_match(nm, m, std::regex("(UNI-)?MAE(-([0-9]+))?"));
  const bool nobcd = !mae && std::regex_match(nm, m, std::regex("NOBCD(-([0-9]+))?"));
  MOE_CHECK(mae || nobcd, "model.attention.name: '", nm, "' is not MAE-<n>, UNI-MAE-<n> or NOBCD-<n> (n = h-1 or h-2)");
  const std::string number = mae ? m[3].str() : m[2].str();
  if (!number.empty()) {
    const int n = std::stoi(number);
    MOE_CHECK(n == o.heads - 1 || n == o.heads - 2, "model.attention.name: '", nm, "' mixes experts of ", n,
              " heads, but with heads = ", o.heads, " only MAE-", o.heads - 1, " and MAE-", o.heads - 2, " exist");
    o.dropped = o.heads - n;
  }
  if (mae && m[1].matched) o.gate = MaeGate::uniform;
  if (nobcd) o.training = MaeTraining::joint;
}

const config::Keys<MaeOptions>& mae_keys() {
  using config::ValueType;
  static const config::Keys<MaeOptions> keys =
      config::Keys<MaeOptions>("attention type mae")
          .accept("type", "mae")
          .add_custom(
              "name", ValueType::String, "MAE-<n>, UNI-MAE-<n> or NOBCD-<n> (n = h-1 or h-2)",
              [](const YAML::Node& v, MaeOptions& o, const std::string&) { parse_name(v.Scalar(), o); },
              [](const MaeOptions& o) { return YAML::Node(o.name()); })
          .add_custom(
              "experts", ValueType::String, "h-1 | h-2: the heads an expert keeps",
              [](const YAML::Node& v, MaeOptions& o, const std::string& key) {
                const std::string e = v.IsScalar() ? v.Scalar() : YAML::Dump(v);
                MOE_CHECK(e == "h-1" || e == "h-2", key, ": '", e, "' is not h-1 or h-2");
                o.dropped = e == "h-1" ? 1 : 2;
              },
              [](const MaeOptions& o) { return YAML::Node(o.dropped == 1 ? "h-1" : "h-2"); })
          .add("gate", &MaeOptions::gate, "learned, or uniform (UNI-MAE)")
          .add("training", &MaeOptions::training, "bcd (block coordinate descent) or joint (NOBCD)")
          .add("gate_hidden", &MaeOptions::gate_hidden, "tanh units of the gate MLP", config::at_least<int64_t>(1))
          .add("gate_dropout", &MaeOptions::gate_dropout, "dropout after the gate's tanh",
               [](const float& p, const std::string& key) {
                 MOE_CHECK(p >= 0.f && p < 1.f, key, ": ", p, " is not in [0, 1)");
               })
          .add("gate_window", &MaeOptions::gate_window, "W of causal_window_mean", config::at_least<int64_t>(1))
          .add_custom(
              "gate_input", ValueType::Map, "a preset (leak_free, paper) or a map role -> policy",
              [](const YAML::Node& v, MaeOptions& o, const std::string& key) {
                read_roles(v, key, preset, o.gate_input);
              },
              [](const MaeOptions& o) { return write_roles(o.gate_input); })
          .add_custom(
              "gate_norm", ValueType::Map, "batch | running | none, the preset leak_free, or a map role -> norm",
              [](const YAML::Node& v, MaeOptions& o, const std::string& key) {
                read_roles(v, key, norm_preset, o.gate_norm);
              },
              [](const MaeOptions& o) { return write_roles(o.gate_norm); });
  return keys;
}
}  // namespace

MaeOptions MaeOptions::from_yaml(const YAML::Node& node, int heads) {
  MaeOptions o;
  o.heads = heads;
  o.gate_input = preset(kDefaultPreset);
  o.gate_norm = norm_preset(kDefaultPreset);
  mae_keys().read(node, o, "model.attention");
  if (node && node.IsMap() && node["name"]) {
    MaeOptions named;
    named.heads = heads;
    parse_name(node["name"].Scalar(), named);
    MOE_CHECK(o.dropped == named.dropped && o.gate == named.gate && o.training == named.training,
              "model.attention: name ", node["name"].Scalar(), " disagrees with experts/gate/training = h-", o.dropped,
              "/", enum_name(o.gate), "/", enum_name(o.training));
  }
  MOE_CHECK(heads >= o.dropped + 1, "model.attention (mae): MAE-(h-", o.dropped, ") needs more than ", o.dropped,
            " heads, model.heads = ", heads);
  MOE_CHECK(o.gate == MaeGate::learned || o.training == MaeTraining::bcd,
            "model.attention (mae): a uniform gate has nothing to train jointly (training: joint needs gate: learned)");
  for (const auto& [role, policy] : o.gate_input)
    MOE_CHECK(policy != GateInput::source_mean || role == SiteRole::decoder_self || role == SiteRole::decoder_cross,
              "model.attention.gate_input.", enum_name(role),
              ": source_mean is only for decoder sites (it averages the encoder output)");
  return o;
}

void MaeOptions::pin_gate_input(YAML::Node& attention) {
  if (site_type(attention, "mha") != "mae") return;
  // No entry: the default preset; a partial map: completed from it, role by role; a name stays
  // (from_yaml checks it).
  auto pin = [&](const char* key, const YAML::Node& defaults) {
    const YAML::Node v = attention[key];
    if (v && !v.IsMap()) return;
    if (!v) {
      attention[key] = kDefaultPreset;
      return;
    }
    for (const auto& kv : defaults)
      if (!v[kv.first.Scalar()]) attention[key][kv.first.Scalar()] = kv.second.Scalar();
  };
  pin("gate_input", write_roles(preset(kDefaultPreset)));
  pin("gate_norm", write_roles(norm_preset(kDefaultPreset)));
}

std::string MaeOptions::name() const {
  const std::string n = std::to_string(heads - dropped);
  if (gate == MaeGate::uniform) return "UNI-MAE-" + n;
  return (training == MaeTraining::joint ? "NOBCD-" : "MAE-") + n;
}

}  // namespace moe
