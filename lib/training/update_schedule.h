// Update schedules: the trainer asks one, chosen for the model when training starts, which passes make
// an update and what each pass steps, so family-specific training (MAE's block coordinate descent with
// its gate optimizer and parameter groups) lives in its own plug-in instead of the trainer. An update
// runs its passes in order on the same batches; every pass but the last is a side pass whose gradients
// the schedule steps itself (side_step: MAE's G pass updates the gates by plain SGD); the last pass is
// the update proper, stepped by the main optimizer over main_ranges() (with clipping, loss scaling and
// the learning-rate schedule), after which after_main_step runs (NOBCD: the gates by their SGD).
// A schedule is registered by a factory that returns nullptr for models it does not apply to; the first
// that applies wins, plain last (builtin_schedules.cpp: one line per schedule). Fine-tuning
// (train.trainable, fine_tuning.h) freezes parameters before the schedule sees the store, so every
// schedule trains only what is trainable. Covered by tests/training/bcd_test.cpp,
// tests/training/bcd_trainer_test.cpp and tests/training/resume_test.cpp.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/parameters.h"
#include "layers/build_context.h"
#include "models/model.h"
#include "training/train_options.h"

namespace moe {

/// What a pass of an update trains: everything (plain), the gates (MAE's G pass), all but the gates
/// (F), or everything with the gates by their own optimizer (joint, NOBCD). Names as the MAE paper's.
enum class UpdatePass { plain, gates, experts, joint };
inline const std::vector<std::string>& enum_names(UpdatePass) {
  static const std::vector<std::string> names{"plain", "G", "F", "joint"};
  return names;
}

struct Pass {
  UpdatePass kind = UpdatePass::plain;
  ExpertChoice experts = ExpertChoice::mixture;  // the pass's graphs (BuildContext::experts)
};

class UpdateSchedule {
 public:
  virtual ~UpdateSchedule() = default;
  /// One line for the log: what an update does.
  virtual std::string describe() const = 0;
  /// The passes of every update in epoch `epoch` (counted from 1), in order; the last is the update.
  virtual std::vector<Pass> passes(int64_t epoch) const = 0;
  /// The ranges the main optimizer steps after the last pass.
  virtual const ParameterStore::Ranges& main_ranges() const = 0;
  /// After a side pass: steps what it trains; returns the gradient norm (non-finite: nothing changed).
  virtual double side_step(ParameterStore& store, const Pass& pass, double grad_scale);
  /// After the main optimizer's step of the update.
  virtual void after_main_step(ParameterStore&, const Pass&, double /*grad_scale*/) {}
};

/// The schedule of a model, or nullptr when the schedule does not apply to it.
using ScheduleFactory =
    std::function<std::unique_ptr<UpdateSchedule>(const Model& model, ParameterStore& store, const TrainOptions& o)>;

/// Every update is one pass over everything trainable.
std::unique_ptr<UpdateSchedule> plain_schedule(ParameterStore& store);
/// A warning when a kind of pass that the schedule runs in some epoch never runs in a run of `epochs`
/// epochs (counted from 1): e.g. MAE's G passes in epochs 5, 10, ... and a 2-epoch run, whose gates
/// then keep their initial values. Empty when every kind of pass the schedule has runs within the run.
std::string unreached_pass_warning(const UpdateSchedule& schedule, int64_t epochs);

/// MAE (attention type mae): block coordinate descent, UNI-MAE's F updates or NOBCD's joint ones.
std::unique_ptr<UpdateSchedule> mae_schedule(const Model& model, ParameterStore& store, const TrainOptions& o);

/// The registered factories in order (builtin_schedules.cpp); make_update_schedule asks them in turn.
const std::vector<ScheduleFactory>& schedule_factories();
std::unique_ptr<UpdateSchedule> make_update_schedule(const Model& model, ParameterStore& store, const TrainOptions& o);

}  // namespace moe
