// fine_tuning.h implementation: parameter copying by name and the trainable-pattern filter.
// Covered by tests/training/fine_tuning_test.cpp.
#include "training/fine_tuning.h"

#include <regex>
#include <set>

#include "common/error.h"
#include "tensor/safetensors.h"

namespace moe {

InitFromReport init_from_checkpoint(const std::string& path, ParameterStore& store) {
  const SafetensorsFile file = load_safetensors(path);
  InitFromReport r;
  std::set<std::string> used;
  for (const ParamEntry& e : store.entries()) {
    if (!file.has(e.name)) {
      r.missing.push_back(e.name);
      continue;
    }
    const Tensor& t = file.get(e.name);
    MOE_CHECK(t.shape() == e.shape, "train.init_from ", path, ": parameter '", e.name, "' has shape ", t.shape(),
              ", the model needs ", e.shape, " (is the recipe's model section the checkpoint's?)");
    MOE_CHECK(t.dtype() == DType::f32, "train.init_from ", path, ": parameter '", e.name, "' is ",
              dtype_name(t.dtype()), ", expected f32");
    store.value(store.find(e.name)).copy_from(t);
    used.insert(e.name);
    ++r.copied;
  }
  MOE_CHECK(r.copied > 0, "train.init_from ", path, ": shares no parameter name with the model");
  for (const auto& [name, t] : file.tensors)
    if (!used.count(name) && name.rfind("vocab.", 0) != 0) ++r.unused;
  return r;
}

int64_t restrict_trainable(ParameterStore& store, const std::vector<std::string>& patterns) {
  if (patterns.empty()) return static_cast<int64_t>(store.entries().size());
  std::vector<std::regex> regexes;
  for (const std::string& p : patterns) {
    try {
      regexes.emplace_back(p);
    } catch (const std::regex_error& e) {
      MOE_FAIL("train.trainable: '", p, "' is not a valid regular expression (", e.what(), ")");
    }
  }
  auto selects = [&](size_t i, const ParamEntry& e) {
    return e.group == patterns[i] || std::regex_match(e.name, regexes[i]);
  };
  for (size_t i = 0; i < patterns.size(); ++i) {
    bool any = false;
    for (const ParamEntry& e : store.entries()) any = any || selects(i, e);
    if (any) continue;
    std::set<std::string> groups;
    for (const ParamEntry& e : store.entries()) groups.insert(e.group.empty() ? "(none)" : e.group);
    std::string known;
    for (const std::string& g : groups) known += (known.empty() ? "" : ", ") + g;
    MOE_FAIL("train.trainable: '", patterns[i], "' selects no parameter (it is compared with parameter ",
             "groups — here ", known, " — and matched as a regex against full names such as '",
             store.entries().empty() ? std::string("?") : store.entries().front().name, "')");
  }
  store.set_trainable(
      [&](const ParamEntry& e) {
        for (size_t i = 0; i < patterns.size(); ++i)
          if (selects(i, e)) return false;
        return true;
      },
      false);
  int64_t trainable = 0;
  for (const ParamEntry& e : store.entries()) trainable += e.trainable ? 1 : 0;
  return trainable;
}

}  // namespace moe
