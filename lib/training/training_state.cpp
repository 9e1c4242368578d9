// training_state.h implementation: counters as decimal metadata strings (doubles as 17 significant
// digits, so they round-trip), optimizer buffers as tensors. Covered by tests/training/checkpoint_test.cpp.
#include "training/training_state.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "common/error.h"
#include "tensor/safetensors.h"

namespace moe {

namespace {
const std::string kPrefix = "optimizer.";

std::string exact(double v) {
  if (std::isnan(v)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

struct Reader {
  const std::string& path;
  const std::map<std::string, std::string>& meta;
  const std::string& get(const std::string& key) const {
    auto it = meta.find(key);
    MOE_CHECK(it != meta.end(), path, ": training state has no '", key, "' entry");
    return it->second;
  }
  int64_t i64(const std::string& key) const {
    try {
      return std::stoll(get(key));
    } catch (const std::logic_error&) {
      MOE_FAIL(path, ": training state entry '", key, "' = '", get(key), "' is not an integer");
    }
  }
  double f64(const std::string& key) const {
    const std::string& s = get(key);
    if (s == "nan") return std::nan("");
    try {
      return std::stod(s);
    } catch (const std::logic_error&) {
      MOE_FAIL(path, ": training state entry '", key, "' = '", s, "' is not a number");
    }
  }
};
}  // namespace

std::string state_path_for(const std::string& checkpoint_path) {
  const std::string ext = ".safetensors";
  if (checkpoint_path.size() > ext.size() &&
      checkpoint_path.compare(checkpoint_path.size() - ext.size(), ext.size(), ext) == 0)
    return checkpoint_path.substr(0, checkpoint_path.size() - ext.size()) + ".state" + ext;
  return checkpoint_path + ".state";
}

std::string previous_state_path_for(const std::string& checkpoint_path) {
  const std::string state = state_path_for(checkpoint_path), ext = ".safetensors";
  if (state.size() > ext.size() && state.compare(state.size() - ext.size(), ext.size(), ext) == 0)
    return state.substr(0, state.size() - ext.size()) + ".previous" + ext;
  return state + ".previous";
}

void save_training_state(const std::string& path, const TrainingState& s) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : s.optimizer) tensors.emplace_back(kPrefix + name, t);
  if (s.ema.defined()) tensors.emplace_back("ema", s.ema);
  std::map<std::string, std::string> meta = {
      {"moe.training_state", "1"},
      {"update", std::to_string(s.update)},
      {"epoch", std::to_string(s.epoch)},
      {"batches", std::to_string(s.batches)},
      {"seed", std::to_string(s.seed)},
      {"data_state", s.data_state},
      {"loss_scale", exact(s.loss_scale)},
      {"loss_scale_clean", std::to_string(s.loss_scale_clean)},
      {"best_metric", exact(s.best_metric)},
      {"best_update", std::to_string(s.best_update)},
      {"bad_validations", std::to_string(s.bad_validations)},
      {"window_loss", exact(s.window_loss)},
      {"window_gnorm", exact(s.window_gnorm)},
      {"window_tokens", std::to_string(s.window_tokens)},
      {"window_updates", std::to_string(s.window_updates)},
  };
  save_safetensors(path, tensors, meta);
}

TrainingState load_training_state(const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  Reader r{path, file.metadata};
  MOE_CHECK(file.metadata.count("moe.training_state"), path, ": not a moe training state file");
  TrainingState s;
  s.update = r.i64("update");
  s.epoch = r.i64("epoch");
  s.batches = r.i64("batches");
  s.seed = static_cast<uint64_t>(std::stoull(r.get("seed")));
  s.data_state = r.get("data_state");
  s.loss_scale = r.f64("loss_scale");
  s.loss_scale_clean = r.i64("loss_scale_clean");
  s.best_metric = r.f64("best_metric");
  s.best_update = r.i64("best_update");
  s.bad_validations = r.i64("bad_validations");
  s.window_loss = r.f64("window_loss");
  s.window_gnorm = r.f64("window_gnorm");
  s.window_tokens = r.i64("window_tokens");
  s.window_updates = r.i64("window_updates");
  for (const auto& [name, t] : file.tensors) {
    if (name.rfind(kPrefix, 0) == 0) s.optimizer[name.substr(kPrefix.size())] = t;
    if (name == "ema") s.ema = t;
  }
  return s;
}

}  // namespace moe
