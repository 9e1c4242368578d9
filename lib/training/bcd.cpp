// bcd.h implementation. Covered by tests/training/bcd_test.cpp.
#include "training/bcd.h"

namespace moe {

std::vector<std::string> mae_updates(const MaeOptions& o, const BcdSchedule& s, int64_t epoch) {
  MOE_CHECK(s.g_every >= 1 && s.g_offset >= 0 && s.g_offset < s.g_every, "bcd: g_every ", s.g_every,
            " must be >= 1 and g_offset ", s.g_offset, " in [0, g_every)");
  MOE_CHECK(epoch >= 0, "bcd: epoch ", epoch, " is negative");
  if (o.gate == "uniform") return {"F"};
  if (o.training == "joint") return {"joint"};
  if (epoch % s.g_every == s.g_offset) return {"G", "F"};
  return {"F"};
}

std::optional<MaeOptions> mae_training_options(const YAML::Node& model_config) {
  const YAML::Node a = model_config["attention"];
  if (!a || !a.IsMap() || !a["type"] || a["type"].as<std::string>() != "mae") return std::nullopt;
  MOE_CHECK(model_config["heads"], "bcd: the model configuration has MAE attention but no 'heads'");
  return MaeOptions::from_yaml(a, model_config["heads"].as<int>());
}

}  // namespace moe
