// Trainer: the training loop of moe-train, shared by every task (train_task.h: translation or
// language modelling, picked by model.type). Per update it takes update_freq batches from the task's
// prefetched batches, runs forward/backward for each in its own graph (gradients of the summed loss
// plus each auxiliary loss times the batch's target tokens, scaled by loss_scale / target tokens of
// the whole update, added into the parameter store), steps the optimizer at the schedule's learning
// rate, and every log_every / valid_every / save_every updates logs, validates and writes
// run_dir/checkpoint.{last,best,<update>}.safetensors with their training state. A NaN/Inf loss stops
// with an error naming the update (or skips the batch with train.skip_nan_batches); f16 overflows
// halve the loss scale and skip the update. resume continues from checkpoint.last exactly (same
// losses as an uninterrupted run). The model's update schedule (update_schedule.h; MAE's block
// coordinate descent is one) says which passes make an update and what each steps. train.init_from /
// train.trainable select the starting point and the trained parameters (fine_tuning.h). Launched
// with several ranks (mpirun / srun; dist.*), it trains data-parallel and, with experts_per_rank,
// expert-parallel (data_parallel.h, expert_placement.h; tests/dist/). SIGTERM / SIGINT / SIGUSR1 stop it
// with checkpoint.last saved (stop_request.h): between updates, or between the micro-batches of an update
// (train.update_freq > 1) before its first optimizer step, dropping that update's partial gradients and
// saving the state from before it, so that --resume repeats it exactly; the run folder is checked for
// room at start and out-of-memory errors name the keys that reduce memory (run_limits.h).
// Covered by tests/training/resume_test.cpp, lm_train_test.cpp, bcd_trainer_test.cpp,
// fine_tuning_test.cpp, tests/scripts/e2e_translation.sh, e2e_lm.sh, train_signals.sh and disk_faults.sh.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/batch_upload.h"
#include "dist/communicator.h"
#include "graph/parameters.h"
#include "models/model.h"
#include "training/bleu_validation.h"
#include "training/data_parallel.h"
#include "training/loss_scaler.h"
#include "training/optimizer.h"
#include "training/parameter_ema.h"
#include "training/progress.h"
#include "training/schedule.h"
#include "training/stop_request.h"
#include "training/train_options.h"
#include "training/train_task.h"
#include "training/training_state.h"
#include "training/update_schedule.h"

namespace moe {

/// How Trainer::run ended: the run's limits were reached, or a signal stopped it after saving (stop_request.h).
enum class TrainEnd { completed, stopped };

class Trainer {
 public:
  /// config_text: the merged configuration (dump_config), saved as run_dir/config.yml.
  Trainer(TrainOptions options, std::string config_text = "");
  ~Trainer();
  /// Trains until train.max_updates / train.max_epochs / early stopping, or a stop signal (train.on_signal).
  /// With resume, continues from run_dir/checkpoint.last.safetensors and its state (an error when they are
  /// missing).
  TrainEnd run(bool resume);

  /// Called before every update attempt with the store and the number the update will get (tests
  /// use it to inject NaN parameters; tools can use it to inspect or edit parameters).
  using UpdateHook = std::function<void(ParameterStore& store, int64_t next_update)>;
  void set_update_hook(UpdateHook hook) { hook_ = std::move(hook); }
  /// Called after every optimizer step with the store and the pass it stepped (update_schedule.h: plain,
  /// or MAE's G, F and joint passes; tests check what each step changed).
  using StepHook = std::function<void(const ParameterStore& store, UpdatePass pass)>;
  void set_step_hook(StepHook hook) { step_hook_ = std::move(hook); }

  /// The decoder of BLEU validation (valid.bleu / valid.metric bleu): moe-train passes lib/translator's
  /// beam search (apps/moe-train/bleu_decoder.h); without one, BLEU validation is refused at start-up.
  void set_bleu_decoder(BleuDecoder decoder) { bleu_decoder_ = std::move(decoder); }

  /// The communicator to train over (tests; must outlive run()); by default run() makes one from
  /// dist.backend. With several ranks, see data_parallel.h.
  void set_communicator(dist::Communicator* comm) { comm_ = comm; }

  /// Ends the run after `updates` updates as a limit would (final validation and checkpoints), while
  /// train.max_updates and the schedule stay as the recipe says (tests start recipes unchanged).
  void stop_after(int64_t updates) { stop_after_ = updates; }

  const TrainingState& state() const { return st_; }
  /// The learning-rate schedule (its decay length counted from the data once run() has loaded it).
  const LrSchedule& lr_schedule() const { return schedule_; }
  const ParameterStore& params() const { return *store_; }
  Device device() const { return device_; }

 private:
  void setup_model();
  void setup_dist();
  void settle_schedule_length();  // cosine / linear over train.max_epochs: count the updates of an epoch
  void warn_unreached_passes() const;  // a kind of pass (MAE's G) the run is too short to reach
  bool lead() const { return !dp_ || dp_->lead(); }
  /// Runs `f` on rank 0 first and on the others after it (files it creates: vocabularies, caches).
  void rank0_first(const std::function<void()>& f);
  TrainEnd run_ranks(bool resume);  // run() after setup_dist(): an error here aborts a job of several ranks
  void abort_other_ranks(const std::exception& e);
  void check_disk_room();                            // run_limits.h, once the model is known
  /// Saves checkpoint.last (trainer_io.cpp); `dropped`: the micro-batches of an interrupted update.
  TrainEnd stop_on_signal(const StopRequest& stop, int64_t dropped = 0);
  void restore(const std::string& checkpoint);
  /// How an update attempt ended: stepped, skipped (NaN batches, f16 overflow), or interrupted by a stop
  /// signal between its micro-batches, before any optimizer step (nothing changed but the gradients).
  enum class UpdateEnd { stepped, skipped, interrupted };
  /// Where a pass polls for a stop signal: before its batches 1..until, those before every rank's last batch
  /// with rows (whose backward starts the gradient all-reduce), the same on every rank (a collective).
  struct StopPoll {
    StopRequest* request = nullptr;
    size_t until = 0;
  };
  /// One update over `batches`; `poll` applies to its first pass only (a later one follows a step).
  UpdateEnd train_update(const std::vector<TrainBatch>& batches, StopPoll poll);
  /// Forward and backward over `batches` as `pass` builds them: summed loss and tokens of the finite
  /// batches, and the factor that turns the gradients into those of their mean.
  /// A stop signal agreed where `poll` says ends the pass early, `interrupted`.
  struct PassResult {
    double loss_sum = 0, grad_scale = 0;
    int64_t used = 0;
    bool interrupted = false;
  };
  PassResult accumulate(const std::vector<TrainBatch>& batches, int64_t expected, const Pass& pass,
                        StopPoll poll);
  void after_update();
  void log_window();
  void validate();
  /// Saves `params` (default: the training parameters) at `path` with the training state.
  void save(const std::string& path, const ParameterStore* params = nullptr);
  /// What every checkpoint's metadata holds: the task's entries, the update and the epoch.
  std::map<std::string, std::string> checkpoint_metadata() const;
  /// checkpoint.last, and a numbered one where `at` asks for it: an epoch's end, or the update schedule
  /// when train.numbered_checkpoints is updates; a stop signal saves checkpoint.last only.
  enum class SaveAt { schedule, epoch_end, last_only };
  void save_all(SaveAt at = SaveAt::schedule);
  void remove_old_numbered();
  bool finished() const;
  std::string path_in_run(const std::string& name) const;
  /// What every graph of the run (training, declaration, validation) is built with: the communicator
  /// when there are several ranks (layers/build_context.h).
  BuildContext graph_context() const;

  TrainOptions o_;
  TrainOptions task_o_;  // what the task reads: with N ranks, N times the per-rank batch (data_parallel.h)
  std::string config_text_;
  dist::Communicator* comm_ = nullptr;
  std::unique_ptr<dist::Communicator> own_comm_;
  std::unique_ptr<DataParallel> dp_;
  int log_level_ = -1;  // ranks other than 0: the log level before run() lowered it
  Device device_;
  std::unique_ptr<data::BatchUploader> uploader_;
  std::unique_ptr<TrainTask> task_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<ParameterStore> store_;
  std::unique_ptr<Optimizer> opt_;
  std::unique_ptr<ParameterEma> ema_;                // train.ema_decay > 0: the smoothed parameters
  std::unique_ptr<UpdateSchedule> update_schedule_;  // which passes make an update (update_schedule.h)
  LrSchedule schedule_;
  LossScaler scaler_;
  TrainingState st_;
  std::unique_ptr<MetricsLog> metrics_;
  std::unique_ptr<ProgressBar> bar_;
  int64_t last_valid_ = -1, last_save_ = -1;
  bool stop_ = false;
  int64_t skipped_in_a_row_ = 0;  // updates skipped (NaN batches, overflows) since the last applied one
  int64_t stop_after_ = 0;        // stop_after(): 0 = no such limit
  BleuDecoder bleu_decoder_;
  UpdateHook hook_;
  StepHook step_hook_;
  std::chrono::steady_clock::time_point window_start_, loop_start_ = std::chrono::steady_clock::now();
};

}  // namespace moe
