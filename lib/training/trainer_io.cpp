// trainer.h implementation, part 2: log lines, validation with early stopping, checkpoints
// (last / best / numbered, each with its training state; with train.ema_decay checkpoint.best holds the
// smoothed parameters that validation scored and checkpoint.ema.safetensors the latest smoothed ones)
// and resuming from checkpoint.last.
// A pair is replaced in three steps: the old state moves to <stem>.state.previous.safetensors, the new state
// is written, then the new checkpoint (each write atomic), and the previous state is removed. A run killed
// anywhere in between leaves a checkpoint beside a state of the same update (the current or the previous one),
// and restore() takes whichever matches, then puts the pair back in order. A write that fails (a full disk, an I/O
// error) puts the previous pair back as it was and stops the run with an error naming the file. A stop signal
// saves checkpoint.last as of the last finished update (stop_on_signal).
// Covered by tests/training/resume_test.cpp, tests/scripts/e2e_translation.sh, train_signals.sh and disk_faults.sh.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>

#include "common/error.h"
#include "common/stop_signal.h"
#include "tensor/allocator.h"
#include "tensor/safetensors.h"
#include "training/run_limits.h"
#include "training/trainer.h"

namespace moe {

namespace fs = std::filesystem;

void Trainer::log_window() {
  if (st_.window_updates == 0) return;
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  TrainFigures f;
  f.epoch = st_.epoch + 1;
  f.update = st_.update;
  f.loss = st_.window_loss / static_cast<double>(std::max<int64_t>(st_.window_tokens, 1));
  f.lr = schedule_.at(st_.update);
  f.gnorm = st_.window_gnorm / static_cast<double>(st_.window_updates);
  f.tokens = st_.window_tokens;
  f.tokens_per_s = seconds > 0 ? static_cast<double>(st_.window_tokens) / seconds : 0;
  f.loss_scale = scaler_.scale();
  Allocator& alloc = allocator_for(device_);
  f.mem_peak = alloc.stats().peak_in_use;
  alloc.reset_peak();
  bar_->clear();
  spdlog::info("{}", format_train_line(f));
  if (metrics_) metrics_->train(f);
  st_.window_loss = st_.window_gnorm = 0;
  st_.window_tokens = st_.window_updates = 0;
  window_start_ = now;
}

void Trainer::validate() {
  last_valid_ = st_.update;
  ParameterStore& validated = ema_ ? ema_->params() : *store_;  // train.ema_decay: the smoothed parameters
  ValidFigures f = task_->validate(*model_, validated, o_.dtype, graph_context());
  f.epoch = st_.epoch + 1;
  f.update = st_.update;
  // loss and ppl rank the same way (ppl = exp(loss)), lower is better; BLEU: higher is better.
  const bool by_bleu = o_.valid.metric == ValidMetric::bleu;
  const double metric = by_bleu ? f.bleu : f.loss;
  f.improved = std::isnan(st_.best_metric) || (by_bleu ? metric > st_.best_metric : metric < st_.best_metric);
  if (f.improved) {
    st_.best_metric = metric;
    st_.best_update = st_.update;
    st_.bad_validations = 0;
  } else {
    ++st_.bad_validations;
  }
  bar_->clear();
  spdlog::info("{}", format_valid_line(f));
  if (metrics_) metrics_->valid(f);
  // With EMA the smoothed parameters; else the trained ones, gathered from every rank (expert parallelism).
  if (f.improved) save(path_in_run("checkpoint.best.safetensors"), ema_ ? &validated : nullptr);
  if (o_.early_stopping > 0 && st_.bad_validations >= o_.early_stopping) {
    spdlog::info("moe-train: early stopping: {} validations without improvement (best {} at update {})",
                 st_.bad_validations, st_.best_metric, st_.best_update);
    stop_ = true;
  }
}

std::map<std::string, std::string> Trainer::checkpoint_metadata() const {
  std::map<std::string, std::string> meta = task_->checkpoint_metadata();
  meta["moe.update"] = std::to_string(st_.update);
  meta["moe.epoch"] = std::to_string(st_.epoch);
  return meta;
}

void Trainer::save(const std::string& path, const ParameterStore* chosen) {
  TrainingState s = st_;
  s.optimizer = dp_ ? dp_->full_state(*opt_) : opt_->state();  // a collective when sharded or experts are placed
  const ParameterStore& params = chosen ? *chosen : dp_ ? dp_->whole_parameters() : *store_;  // every expert
  if (!lead()) return;  // rank 0 alone writes (every rank holds the same parameters)
  if (ema_) s.ema = ema_->values().to(Device::cpu());
  s.loss_scale = scaler_.scale();
  s.loss_scale_clean = scaler_.clean_updates();
  const std::string state = state_path_for(path), previous = previous_state_path_for(path);
  const bool had_pair = fs::exists(path) && fs::exists(state);
  if (had_pair) fs::rename(state, previous);  // the old checkpoint's, until it is replaced
  bool state_written = false;
  try {
    save_training_state(state, s);
    state_written = true;
    save_checkpoint(path, *model_, params, task_->vocab_files(), checkpoint_metadata());
  } catch (const std::exception& e) {  // a full disk, an I/O error: put the previous pair back as it was
    std::error_code ec;
    if (had_pair)
      fs::rename(previous, state, ec);
    else if (state_written)
      fs::remove(state, ec);
    MOE_FAIL("moe-train: saving the checkpoint of update ", st_.update, " failed: ", e.what(),
             had_pair ? "; the previous checkpoint and its training state are kept as they were (make room, then "
                        "continue with --resume)"
                      : "");
  }
  fs::remove(previous);
}

void Trainer::save_all(SaveAt at) {
  last_save_ = st_.update;
  save(path_in_run("checkpoint.last.safetensors"));
  if (ema_ && lead())  // atomic; --resume reads the smoothed parameters from checkpoint.last's state
    save_checkpoint(path_in_run("checkpoint.ema.safetensors"), *model_, ema_->params(), task_->vocab_files(),
                    checkpoint_metadata());
  const bool numbered = at == SaveAt::epoch_end ||
                        (at == SaveAt::schedule && o_.numbered_checkpoints == NumberedCheckpoints::updates);
  if (o_.keep_last > 0 && numbered) {
    save(path_in_run("checkpoint." + std::to_string(st_.update) + ".safetensors"));
    if (lead()) remove_old_numbered();
  }
  if (dp_) comm_->barrier();  // nobody resumes from, or reads, a checkpoint rank 0 is still writing
  spdlog::info("moe-train: saved {} at update {}", path_in_run("checkpoint.last.safetensors"), st_.update);
}

TrainEnd Trainer::stop_on_signal(const StopRequest& stop, int64_t dropped) {
  bar_->clear();
  if (dropped > 0)
    spdlog::info("moe-train: {} arrived during update {}: its {} micro-batches are dropped (--resume repeats it)",
                 stop.cause(), st_.update + 1, dropped);
  if (st_.update == 0 && last_save_ < 0) {  // a fresh run
    spdlog::info("moe-train: stopped by {} before the first update: nothing to save (start again without --resume)",
                 stop.cause());
    return TrainEnd::stopped;
  }
  if (last_save_ != st_.update) save_all(SaveAt::last_only);  // numbered ones keep their schedule
  spdlog::info(
      "moe-train: stopped by {} after update {}: {} and its training state are saved; continue with "
      "--resume (exit status {})",
      stop.cause(), st_.update, path_in_run("checkpoint.last.safetensors"), kExitStopped);
  return TrainEnd::stopped;
}

void Trainer::check_disk_room() {
  uint64_t vocab_bytes = 0;
  for (const VocabFile& v : task_->vocab_files()) vocab_bytes += v.bytes.size();
  const int64_t kept = 1 + (task_->has_validation() ? 1 : 0) + o_.keep_last;  // last, best, numbered
  check_room(o_.run_dir, estimate_checkpoint(store_->count(), vocab_bytes, o_.optimizer), kept);
}

void Trainer::remove_old_numbered() {
  static const std::regex numbered(R"(checkpoint\.(\d+)\.safetensors)");
  std::vector<std::pair<int64_t, fs::path>> found;
  for (const auto& e : fs::directory_iterator(o_.run_dir)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, m, numbered)) found.emplace_back(std::stoll(m[1].str()), e.path());
  }
  std::sort(found.begin(), found.end());
  for (size_t i = 0; i + static_cast<size_t>(o_.keep_last) < found.size(); ++i) {
    fs::remove(found[i].second);
    fs::remove(state_path_for(found[i].second.string()));
    fs::remove(previous_state_path_for(found[i].second.string()));
  }
}

// The training state that belongs to `checkpoint` (of update `update`): its state file, or the previous one that
// save() keeps while it replaces a pair; `from_previous` says which.
static TrainingState matching_state(const std::string& checkpoint, const std::string& update, bool& from_previous) {
  std::string found;  // the states looked at, for the error
  for (const std::string& p : {state_path_for(checkpoint), previous_state_path_for(checkpoint)}) {
    if (!fs::exists(p)) continue;
    TrainingState candidate = load_training_state(p);
    found += " " + p + " (update " + std::to_string(candidate.update) + ")";
    from_previous = p == previous_state_path_for(checkpoint);
    if (std::to_string(candidate.update) == update) return candidate;
  }
  MOE_FAIL("--resume: ", checkpoint, " (update ", update, ") has no training state of the same update; found", found);
}

void Trainer::restore(const std::string& checkpoint) {
  const std::string state_path = state_path_for(checkpoint), previous = previous_state_path_for(checkpoint);
  MOE_CHECK(fs::exists(checkpoint) && (fs::exists(state_path) || fs::exists(previous)), "--resume: ", checkpoint,
            " or ", state_path, " is missing (nothing to resume in run_dir ", o_.run_dir, ")");
  const SafetensorsFile file = load_safetensors(checkpoint);
  auto model = file.metadata.find("moe.model");
  MOE_CHECK(model != file.metadata.end(), checkpoint, ": not a moe checkpoint");
  MOE_CHECK(model->second == YAML::Dump(model_->config_yaml()), "--resume: the model in ", checkpoint,
            " differs from the recipe's model section:\n", model->second, "\nversus\n",
            YAML::Dump(model_->config_yaml()));
  ExpertPlacement* experts = dp_ ? dp_->experts() : nullptr;
  for (const ParamEntry& e : store_->entries()) {
    const Tensor t = experts ? experts->local_part(e, file.get(e.name)) : file.get(e.name);
    MOE_CHECK(t.shape() == e.shape && t.dtype() == DType::f32, checkpoint, ": parameter '", e.name, "' is ",
              dtype_name(t.dtype()), " ", t.shape(), ", the model needs f32 ", e.shape);
    store_->value(store_->find(e.name)).copy_from(t);
  }
  auto update = file.metadata.find("moe.update");
  MOE_CHECK(update != file.metadata.end(), checkpoint, ": no moe.update entry (not written by moe-train)");
  bool from_previous = false;
  TrainingState s = matching_state(checkpoint, update->second, from_previous);
  if (dp_) comm_->barrier();  // every rank has read the files before rank 0 puts the pair back in order
  if (lead() && from_previous) fs::rename(previous, state_path);
  if (lead() && !from_previous) fs::remove(previous);  // left over after the new checkpoint had landed
  MOE_CHECK(s.seed == o_.seed, "--resume: the run used train.seed ", s.seed, ", the recipe now says ", o_.seed);
  for (auto& [name, t] : s.optimizer) {
    if (t.dtype() == DType::f32) t = t.to(device_);
    if (experts && t.dtype() == DType::f32 && t.shape().ndim() == 1 && t.numel() == experts->full_numel())
      t = experts->from_full(t);  // the single-process layout -> this rank's
  }
  opt_->load_state(s.optimizer);
  s.optimizer.clear();
  if (ema_ && !s.ema.defined())
    spdlog::warn(
        "moe-train: {} holds no smoothed parameters (saved without train.ema_decay): they start from the "
        "resumed ones",
        state_path);
  if (ema_) ema_->restore(s.ema.defined() ? s.ema : store_->values(), state_path);
  s.ema = Tensor();
  scaler_.restore(s.loss_scale, s.loss_scale_clean);
  task_->restore(s.data_state);
  st_ = std::move(s);
  spdlog::info("moe-train: resumed from {} at update {} (epoch {})", checkpoint, st_.update, st_.epoch + 1);
}

}  // namespace moe
