// MoaOptions (moa.h): the recipe keys of attention type moa as one key table, the name shorthand
// <k>K<E>E<D>D, and the checks across keys. Covered by tests/layers/moa_test.cpp (options cases).
#include <regex>

#include "config/keys.h"
#include "layers/moa.h"

namespace moe {

namespace {
struct Named {
  int k, experts;
  int64_t head_dim;
};

Named parse_name(const std::string& nm, const std::string& key) {
  std::smatch m;
  MOE_CHECK(std::regex_match(nm, m, std::regex("([0-9]+)K([0-9]+)E([0-9]+)D")), key, ": '", nm,
            "' is not of the form <k>K<E>E<D>D (e.g. 8K8E128D)");
  return {std::stoi(m[1]), std::stoi(m[2]), std::stoll(m[3])};
}

const config::Keys<MoaOptions>& moa_keys() {
  static const config::Keys<MoaOptions> keys =
      config::Keys<MoaOptions>("attention type moa")
          .accept("type", "moa")
          .add_custom(
              "name", config::ValueType::String, "<k>K<E>E<D>D, e.g. 8K8E128D (sets k, experts, head_dim)",
              [](const YAML::Node& v, MoaOptions& o, const std::string& key) {
                const Named n = parse_name(v.Scalar(), key);
                o.k = n.k, o.experts = n.experts, o.head_dim = n.head_dim;
              },
              [](const MoaOptions& o) { return YAML::Node(o.name()); })
          .add("k", &MoaOptions::k, "experts (heads) per token (default: model.heads)")
          .add("experts", &MoaOptions::experts, "E")
          .add("head_dim", &MoaOptions::head_dim, "D", config::at_least<int64_t>(1))
          .add("renormalize", &MoaOptions::renormalize, "renormalise the top-k gates")
          .add("dispatch", &MoaOptions::dispatch, "expert computation (auto: dense when k == experts)")
          .add("switch_loss", &MoaOptions::switch_loss, "coefficient of the switch (load-balancing) loss")
          .add("z_loss", &MoaOptions::z_loss, "coefficient of the router z-loss")
          .add("cv_loss", &MoaOptions::cv_loss, "coefficient of the CV loss")
          .add("aux_normalization", &MoaOptions::aux_normalization,
               "what the aux terms are added to: the token-summed or the per-token mean loss");
  return keys;
}
}  // namespace

MoaOptions MoaOptions::from_yaml(const YAML::Node& node, int default_k) {
  MoaOptions o;
  o.k = default_k;
  moa_keys().read(node, o, "model.attention");
  if (node && node.IsMap() && node["name"]) {
    const Named n = parse_name(node["name"].Scalar(), "model.attention.name");
    MOE_CHECK(o.k == n.k && o.experts == n.experts && o.head_dim == n.head_dim, "model.attention: name ",
              node["name"].Scalar(), " disagrees with k/experts/head_dim = ", o.k, "/", o.experts, "/", o.head_dim);
  }
  MOE_CHECK(o.experts >= 1 && o.k >= 1 && o.k <= o.experts, "model.attention (moa): need 1 <= k (", o.k,
            ") <= experts (", o.experts, ")");
  MOE_CHECK(o.dispatch != MoaDispatch::dense || o.k == o.experts,
            "model.attention.dispatch: dense needs k == experts, not k = ", o.k, ", experts = ", o.experts);
  return o;
}

std::string MoaOptions::name() const {
  return std::to_string(k) + "K" + std::to_string(experts) + "E" + std::to_string(head_dim) + "D";
}

}  // namespace moe
