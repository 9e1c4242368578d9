// trainer.h implementation, part 1: setup (the task's vocabularies and data, the model) and the
// update loop. Part 2 (validation, checkpoints, resume, logs) is trainer_io.cpp.
// Covered by tests/training/resume_test.cpp, lm_train_test.cpp, bcd_trainer_test.cpp and tests/scripts/e2e_*.sh.
#include "training/trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "graph/expr/binary.h"
#include "graph/expr/unary.h"
#include "graph/graph.h"
#include "layers/moe_ffn.h"
#include "models/model_registry.h"
#include "ops/cpu_gemm.h"
#include "tensor/allocator.h"
#include "tensor/device.h"
#include "training/fine_tuning.h"
#include "training/run_limits.h"

namespace moe {

namespace fs = std::filesystem;
constexpr int64_t kMaxSkippedInARow = 100;

Trainer::Trainer(TrainOptions options, std::string config_text)
    : o_(std::move(options)),
      config_text_(std::move(config_text)),
      device_(Device::parse(o_.device)),
      schedule_(o_.schedule),
      scaler_(o_.dtype == DType::f16, o_.loss_scale, o_.loss_scale_window) {
  st_.seed = o_.seed;
  st_.loss_scale = scaler_.scale();
  if (o_.dtype_auto) {  // never f16, so the loss scaler (set up above for f32) stays off
    o_.dtype = device_.is_cuda() ? DType::bf16 : DType::f32;
    spdlog::info("moe-train: train.dtype auto: {} on {}", dtype_name(o_.dtype), device_.str());
  }
  MOE_CHECK(o_.dtype == DType::f32 || device_.is_cuda(), "train.dtype ", dtype_name(o_.dtype),
            " needs a GPU (train.device resolved to ", device_.str(),
            "); the CPU trains in f32 (train.dtype auto "
            "picks it)");
}

Trainer::~Trainer() {
  if (log_level_ >= 0) spdlog::set_level(static_cast<spdlog::level::level_enum>(log_level_));
}

std::string Trainer::path_in_run(const std::string& name) const { return (fs::path(o_.run_dir) / name).string(); }

void Trainer::rank0_first(const std::function<void()>& f) {
  // On the communicator, not on dp_: setup_model prepares the vocabularies before dp_ exists, and two
  // ranks building one missing vocabulary at once raced on its file (tests/scripts/dist_failure.sh).
  const bool many = comm_ && comm_->world() > 1;
  if (many && comm_->rank() != 0) comm_->barrier();
  f();
  if (many && comm_->rank() == 0) comm_->barrier();
}

void Trainer::setup_dist() {
  if (!comm_) {
    own_comm_ = dist::make_communicator(o_.dist.backend, device_);
    comm_ = own_comm_.get();
  }
  comm_->set_timeout(o_.dist.timeout);
  task_o_ = o_;
  const int world = comm_->world();
  if (world == 1) return;
  if (device_.is_cuda()) device_ = Device::cuda(comm_->local_rank() % std::max(1, gpu_count()));
  // The global batch: the one every rank's generator makes, of which each trains its slice.
  task_o_.max_tokens = o_.max_tokens * world;
  task_o_.max_sentences = o_.max_sentences * world;
  if (comm_->rank() != 0) {  // rank 0 alone logs (restored by the destructor)
    log_level_ = static_cast<int>(spdlog::get_level());
    spdlog::set_level(spdlog::level::warn);
  }
}

BuildContext Trainer::graph_context() const {
  BuildContext c;
  // MoE balancing losses over the global batch; experts_per_rank: expert parallelism.
  if (comm_ && comm_->world() > 1) c.comm = comm_;
  return c;
}

void Trainer::setup_model() {
  YAML::Node model;
  rank0_first([&] { model = task_->prepare(o_.model); });
  model_ = create_model(model);
  task_->attach(*model_);
  // Declare every parameter by building the loss of a one-token batch (no forward), then lay the
  // store out: a fresh run and a resumed one get the same layout and the same initial values.
  store_ = std::make_unique<ParameterStore>(device_, o_.seed);
  {
    Graph g(device_, store_.get(), GraphOptions{.training = true, .compute_dtype = o_.dtype, .seed = o_.seed});
    Builder b(g);
    b.context() = graph_context();
    task_->declare(*model_, b);
  }
  store_->allocate();
  if (!o_.init_from.empty()) {
    const InitFromReport r = init_from_checkpoint(o_.init_from, *store_);
    spdlog::info("moe-train: {} parameters from {}{}{}", r.copied, o_.init_from,
                 r.missing.empty()
                     ? std::string()
                     : fmt::format(", {} kept at their initialisation (e.g. {})", r.missing.size(), r.missing.front()),
                 r.unused ? fmt::format(", {} of its parameters unused", r.unused) : std::string());
  }
  if (!o_.trainable.empty()) {
    const int64_t n = restrict_trainable(*store_, o_.trainable);
    int64_t elements = 0;
    for (const ParamEntry& e : store_->entries()) elements += e.trainable ? e.shape.numel() : 0;
    spdlog::info("moe-train: training {} of {} parameter tensors ({} of {} values)", n, store_->entries().size(),
                 elements, store_->count());
  }
  opt_ = Optimizer::create(o_.optimizer, o_.optim);
  // The batchwise gates' thresholds learn from their own loss, not the model's: outside the logged and clipped norm.
  if (const ParameterStore::Ranges t = store_->trainable_ranges(is_batchwise_threshold); !t.empty()) {
    opt_->set_unclipped(t);
    spdlog::info("moe-train: the batchwise MoE thresholds are stepped outside the gradient norm and train.clip_norm");
  }
  if (comm_->world() > 1) {
    dp_ = std::make_unique<DataParallel>(*comm_, o_.dist, *store_, *opt_);
    dp_->broadcast_parameters();
    spdlog::info("moe-train: {}", dp_->describe(o_.max_tokens));
  }
  update_schedule_ = make_update_schedule(*model_, *store_, o_);
  if (o_.ema_decay > 0) {
    MOE_CHECK(!dp_ || !dp_->experts(), "train.ema_decay: not available with expert parallelism (experts_per_rank) yet");
    ema_ = std::make_unique<ParameterEma>(*store_, o_.ema_decay);
    spdlog::info(
        "moe-train: smoothing the parameters (train.ema_decay {}): validation scores the smoothed ones, "
        "saved as checkpoint.ema.safetensors",
        o_.ema_decay);
  }
  spdlog::info("moe-train: {} ({}) model, {} parameters, {} optimizer, {} on {}", model_->type(), task_name(o_.task),
               store_->count(), opt_->name(), dtype_name(o_.dtype), device_.str());
  if (device_.is_cpu()) spdlog::info("moe-train: CPU: {}", describe(cpu_compute_info()));
  spdlog::info("moe-train: updates: {}", update_schedule_->describe());
  const std::string future = future_warning(*model_, "the training loss and the validation loss and perplexity");
  if (!future.empty()) spdlog::warn("moe-train: {}", future);
}

void Trainer::settle_schedule_length() {
  const int64_t per_epoch = task_->updates_per_epoch(o_.update_freq);
  schedule_ = schedule_.over_epochs(per_epoch);
  const ScheduleOptions& s = schedule_.options();
  spdlog::info("moe-train: train.schedule {} decays over {} epochs x {} updates = {} updates", enum_name(s.kind),
               s.max_epochs, per_epoch, s.max_updates);
  if (s.max_epochs * per_epoch <= s.warmup_updates)
    spdlog::warn(
        "moe-train: {} epochs of this data give {} updates, no more than train.warmup_updates ({}): "
        "training ends before the learning rate reaches train.lr",
        s.max_epochs, s.max_epochs * per_epoch, s.warmup_updates);
}

void Trainer::warn_unreached_passes() const {
  const int64_t per_epoch = task_->updates_per_epoch(o_.update_freq);
  int64_t epochs = o_.max_epochs;  // the run's length in epochs, where train.max_epochs or max_updates bound it
  if (o_.max_updates > 0 && per_epoch > 0) {
    const int64_t by_updates = (o_.max_updates + per_epoch - 1) / per_epoch;
    epochs = epochs > 0 ? std::min(epochs, by_updates) : by_updates;
  }
  if (epochs <= 0) return;
  const std::string warning = unreached_pass_warning(*update_schedule_, epochs);
  if (!warning.empty())
    spdlog::warn("moe-train: {} (train.max_updates {}, train.max_epochs {}, {} updates an epoch)", warning,
                 o_.max_updates, o_.max_epochs, per_epoch);
}

bool Trainer::finished() const {
  const double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start_).count() / 60;
  bool out_of_time = o_.max_minutes > 0 && minutes >= o_.max_minutes;
  if (dp_ && o_.max_minutes > 0)  // the ranks' clocks differ: all stop when the first runs out (a collective)
    out_of_time = comm_->sum(static_cast<int64_t>(out_of_time)) > 0;
  return stop_ || (o_.max_updates > 0 && st_.update >= o_.max_updates) ||
         (stop_after_ > 0 && st_.update >= stop_after_) || (o_.max_epochs > 0 && st_.epoch >= o_.max_epochs) ||
         out_of_time;
}

TrainEnd Trainer::run(bool resume) {
  setup_dist();
  try {
    return run_ranks(resume);
  } catch (const OutOfMemory& e) {
    const OutOfMemory advised(e.what() + memory_advice(o_, device_.is_cuda()));
    abort_other_ranks(advised);
    throw advised;
  } catch (const std::exception& e) {
    abort_other_ranks(e);
    throw;
  }
}

void Trainer::abort_other_ranks(const std::exception& e) {
  // One rank's error ends the job: the others would otherwise wait for it in their next collective
  // (or the launcher for them) until the watchdog's timeout, or forever outside a collective.
  if (comm_->world() > 1) {
    spdlog::error("rank {} of {}: {}; aborting the job", comm_->rank(), comm_->world(), e.what());
    comm_->abort_job(1);
  }
}

TrainEnd Trainer::run_ranks(bool resume) {
  if (lead()) create_run_dir(o_.run_dir);  // run_limits.h: the folder is writable (room: check_disk_room)
  MOE_CHECK(!o_.valid.bleu || bleu_decoder_,
            "valid.metric bleu / valid.bleu: this program has no decoder for BLEU "
            "validation (moe-train passes the translator's); use valid.metric loss or ppl");
  if (!config_text_.empty() && lead()) std::ofstream(path_in_run("config.yml")) << config_text_;
  uploader_ = std::make_unique<data::BatchUploader>(device_);
  task_ = make_train_task(task_o_, *uploader_, bleu_decoder_);
  setup_model();
  if (lead()) check_disk_room();
  rank0_first([&] { task_->load_data(); });
  if (schedule_.needs_updates_per_epoch()) settle_schedule_length();
  if (lead()) warn_unreached_passes();
  if (resume) restore(path_in_run("checkpoint.last.safetensors"));
  if (lead()) metrics_ = std::make_unique<MetricsLog>(path_in_run("metrics.jsonl"), resume ? st_.update : -1);
  task_->start();
  bar_ = std::make_unique<ProgressBar>(o_.max_updates);
  allocator_for(device_).reset_peak();
  loop_start_ = window_start_ = std::chrono::steady_clock::now();
  last_valid_ = last_save_ = resume ? st_.update : -1;

  StopRequest stop(o_.on_signal);  // SIGTERM / SIGINT / SIGUSR1: see stop_request.h
  while (!finished()) {
    if (stop.agreed(comm_)) return stop_on_signal(stop);
    // The position before this update: an update interrupted by a stop signal is saved as not begun.
    const std::string data_before = st_.data_state;
    const int64_t epoch_before = st_.epoch, batches_before = st_.batches;
    std::vector<TrainBatch> batches;
    StopPoll poll{&stop, 0};
    bool epoch_end = false;
    while (static_cast<int64_t>(batches.size()) < o_.update_freq) {
      TrainTask::Item item = task_->next();
      st_.data_state = std::move(item.data_state);
      if (!item.batch) {
        st_.epoch = item.epoch;
        epoch_end = true;
        break;
      }
      if (item.batch->size() >= (dp_ ? dp_->world() : 1)) poll.until = batches.size();  // rows on every rank
      batches.push_back(dp_ ? rank_slice(*item.batch, dp_->rank(), dp_->world()) : std::move(*item.batch));
    }
    if (!batches.empty()) {
      const UpdateEnd end = train_update(batches, poll);
      if (end == UpdateEnd::interrupted) {
        st_.data_state = data_before;
        st_.epoch = epoch_before;
        st_.batches = batches_before;
        return stop_on_signal(stop, static_cast<int64_t>(batches.size()));
      }
      if (end == UpdateEnd::stepped) {
        skipped_in_a_row_ = 0;
        after_update();
      } else {
        MOE_CHECK(++skipped_in_a_row_ < kMaxSkippedInARow, "moe-train: ", kMaxSkippedInARow,
                  " updates in a row were skipped (NaN/Inf losses or gradients) after update ", st_.update,
                  "; stopping");
      }
    }
    if (epoch_end) {
      bar_->clear();
      spdlog::info("moe-train: epoch {} done after {} updates", st_.epoch, st_.update);
      if (o_.numbered_checkpoints == NumberedCheckpoints::epochs) save_all(SaveAt::epoch_end);
    }
  }
  bar_->clear();
  if (task_->has_validation() && last_valid_ != st_.update) validate();
  if (last_save_ != st_.update) save_all();
  spdlog::info("moe-train: finished after {} updates ({} epochs){}", st_.update, st_.epoch,
               stop_ ? " (early stopping)" : "");
  return TrainEnd::completed;
}

Trainer::PassResult Trainer::accumulate(const std::vector<TrainBatch>& batches, int64_t expected, const Pass& kind,
                                        StopPoll poll) {
  store_->zero_grads();
  PassResult pass;
  if (dp_) dp_->begin();
  // Ranks draw different dropout masks (rank 0 keeps the single-process stream).
  const uint64_t seed = o_.seed ^ (static_cast<uint64_t>(dp_ ? dp_->rank() : 0) * 0x9E3779B97F4A7C15ull);
  size_t last = batches.size();  // the last batch with rows: its backward overlaps the gradient all-reduce
  for (size_t i = 0; i < batches.size(); ++i)
    if (batches[i].size() > 0) last = i;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (poll.request && i > 0 && i <= poll.until && poll.request->agreed(comm_)) {
      pass.interrupted = true;
      return pass;
    }
    const TrainBatch& batch = batches[i];
    ++st_.batches;
    if (batch.size() == 0) continue;  // this rank's slice of a small global batch is empty
    Graph g(
        device_, store_.get(),
        GraphOptions{
            .training = true, .compute_dtype = o_.dtype, .seed = seed, .step = static_cast<uint64_t>(st_.batches - 1)});
    if (dp_ && i == last) dp_->arm(g);
    Builder b(g);
    b.context() = graph_context();
    b.context().experts = kind.experts;
    const Expr loss = task_->loss(*model_, b, batch, o_.label_smoothing);
    const Expr objective = b.objective(loss, batch.tokens());
    g.forward();
    const double l = loss.val().item();
    if (!std::isfinite(l)) {
      MOE_CHECK(o_.skip_nan_batches, "moe-train: the training loss is ", l, " at update ", st_.update + 1, " (epoch ",
                st_.epoch + 1, ", batch of ", batch.size(), " sequences, ", batch.tokens(),
                " target tokens); stopping without writing a checkpoint. Lower train.lr, set train.clip_norm, or "
                "set train.skip_nan_batches to skip such batches");
      spdlog::warn("moe-train: skipping a batch with loss {} at update {} ({} sequences)", l, st_.update + 1,
                   batch.size());
      continue;
    }
    g.backward(objective, scaler_.scale() / static_cast<double>(expected));
    pass.loss_sum += l;
    pass.used += batch.tokens();
  }
  if (dp_) dp_->finish(pass.loss_sum, pass.used);  // gradients and figures summed over the ranks
  // Gradients hold loss_scale * d(sum loss)/expected; this factor makes them d(mean loss over used tokens).
  pass.grad_scale = pass.used ? static_cast<double>(expected) / (scaler_.scale() * static_cast<double>(pass.used)) : 0;
  return pass;
}

Trainer::UpdateEnd Trainer::train_update(const std::vector<TrainBatch>& batches, StopPoll poll) {
  int64_t expected = 0;
  for (const auto& b : batches) expected += b.tokens();
  if (dp_) expected = dp_->global(expected);  // losses are normalised by the global batch's tokens
  MOE_CHECK(expected > 0, "moe-train: an update without target tokens (update ", st_.update + 1, ")");
  if (hook_) hook_(*store_, st_.update + 1);
  // The schedule's side passes step what they train themselves (MAE: G passes, the gates); the last pass
  // is the update, stepped by the main optimizer.
  const std::vector<Pass> passes = update_schedule_->passes(st_.epoch + 1);
  // Only the first pass may be interrupted: a later one follows an optimizer step of this update.
  for (size_t i = 0; i + 1 < passes.size(); ++i) {
    const PassResult side = accumulate(batches, expected, passes[i], i == 0 ? poll : StopPoll{});
    if (side.interrupted) return UpdateEnd::interrupted;
    if (!side.used) continue;
    const double gnorm = update_schedule_->side_step(*store_, passes[i], side.grad_scale);
    if (!std::isfinite(gnorm))
      spdlog::warn("moe-train: {} update skipped at update {}: gradient norm {}", enum_name(passes[i].kind),
                   st_.update + 1, gnorm);
    else if (step_hook_)
      step_hook_(*store_, passes[i].kind);
  }
  const Pass& step = passes.back();
  const PassResult pass = accumulate(batches, expected, step, passes.size() == 1 ? poll : StopPoll{});
  if (pass.interrupted) return UpdateEnd::interrupted;
  if (pass.used == 0) return UpdateEnd::skipped;
  const double lr = schedule_.at(st_.update + 1);
  const double gnorm = opt_->step(*store_, update_schedule_->main_ranges(), lr, o_.clip_norm, pass.grad_scale);
  const bool overflow = !std::isfinite(gnorm);
  if (overflow && scaler_.enabled()) {
    MOE_CHECK(scaler_.scale() > 1, "moe-train: the f16 gradient overflows even at loss scale 1 (update ",
              st_.update + 1, "); train with train.dtype bf16 or f32");
    const double before = scaler_.scale();
    scaler_.update(true);
    st_.loss_scale = scaler_.scale();
    st_.loss_scale_clean = scaler_.clean_updates();
    spdlog::info("moe-train: f16 gradient overflow at update {}: update skipped, loss scale {} -> {}", st_.update + 1,
                 before, scaler_.scale());
    return UpdateEnd::skipped;
  }
  if (overflow) {
    MOE_CHECK(o_.skip_nan_batches, "moe-train: the gradient norm is ", gnorm, " at update ", st_.update + 1,
              " (finite loss ", pass.loss_sum / static_cast<double>(pass.used),
              "); stopping without writing a checkpoint");
    spdlog::warn("moe-train: skipping update {}: gradient norm {}", st_.update + 1, gnorm);
    return UpdateEnd::skipped;
  }
  update_schedule_->after_main_step(*store_, step, pass.grad_scale);
  if (dp_) dp_->after_step();  // sharded optimizer: every rank's updated shard to everyone
  if (ema_) ema_->update(*store_);
  if (step_hook_) step_hook_(*store_, step.kind);
  scaler_.update(false);
  st_.loss_scale = scaler_.scale();
  st_.loss_scale_clean = scaler_.clean_updates();
  ++st_.update;
  st_.window_loss += pass.loss_sum;
  st_.window_tokens += pass.used;
  st_.window_gnorm += gnorm;
  ++st_.window_updates;
  bar_->show(st_.update, pass.loss_sum / static_cast<double>(pass.used));
  return UpdateEnd::stepped;
}

void Trainer::after_update() {
  const int64_t u = st_.update;
  if (u % o_.log_every == 0) log_window();
  if (task_->has_validation() && o_.valid_every > 0 && u % o_.valid_every == 0) validate();
  if (o_.save_every > 0 && u % o_.save_every == 0 && !finished()) save_all();
}

}  // namespace moe
