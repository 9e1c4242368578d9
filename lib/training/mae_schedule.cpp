// MAE's update schedule (docs/MODELS.md §1.6, paper Algorithm 3), for models with attention type mae:
//   MAE-7 / MAE-6 (gate learned, training bcd): G then F passes in epochs e (counted from 1) with
//                 e mod train.bcd.g_every == train.bcd.g_offset, F passes otherwise (fairseq's epoch
//                 numbering puts G passes in epochs 5, 10, 15, ... with the defaults)
//   UNI-MAE (gate uniform): F passes only          NOBCD (training joint): joint passes
// A G pass computes the mixture and steps only the gates (parameter group "gate") by plain SGD at
// train.gate_lr without momentum; an F pass draws one expert per gate (ExpertChoice::sample) and is
// stepped by the main optimizer over everything but the gates; a joint pass computes the mixture and
// is stepped by the main optimizer over everything but the gates, then the gates by their SGD from the
// same gradients. In a G epoch each batch gets its G pass first, then the F pass draws from the
// refreshed gates. Covered by tests/training/bcd_test.cpp and tests/training/bcd_trainer_test.cpp.
#include <fmt/format.h>

#include "layers/mae.h"
#include "layers/sites.h"
#include "training/optimizer.h"
#include "training/update_schedule.h"

namespace moe {

namespace {
class MaeSchedule : public UpdateSchedule {
 public:
  MaeSchedule(const MaeOptions& mae, ParameterStore& store, const TrainOptions& o)
      : mae_(mae),
        bcd_(o.bcd),
        gate_lr_(o.gate_lr),
        gate_ranges_(store.trainable_ranges([](const ParamEntry& e) { return e.group == "gate"; })),
        main_ranges_(store.trainable_ranges([](const ParamEntry& e) { return e.group != "gate"; })),
        gate_opt_(Optimizer::create("sgd", OptimizerOptions{.momentum = 0})) {
    MOE_CHECK(bcd_.g_every >= 1 && bcd_.g_offset >= 0 && bcd_.g_offset < bcd_.g_every, "train.bcd.g_every (",
              bcd_.g_every, ") must be >= 1 and train.bcd.g_offset (", bcd_.g_offset, ") in [0, g_every)");
    const bool f_passes = mae_.gate == MaeGate::uniform || mae_.training == MaeTraining::bcd;
    MOE_CHECK(!f_passes || !main_ranges_.empty(), "moe-train: train.trainable leaves nothing for ", mae_.name(),
              "'s expert (F) updates; to train only the gates (FTG) set model.attention.training: joint");
  }

  std::string describe() const override {
    return fmt::format("{} attention, {}; gates: plain SGD at learning rate {}", mae_.name(),
                       mae_.gate == MaeGate::uniform ? "F updates only (uniform expert draws)"
                       : mae_.training == MaeTraining::joint
                           ? "joint updates (NOBCD)"
                           : fmt::format("block coordinate descent: G updates in "
                                         "epochs e with e mod {} == {}, F updates always",
                                         bcd_.g_every, bcd_.g_offset),
                       gate_lr_);
  }

  std::vector<Pass> passes(int64_t epoch) const override {
    MOE_CHECK(epoch >= 0, "bcd: epoch ", epoch, " is negative");
    const Pass f{UpdatePass::experts, ExpertChoice::sample};
    if (mae_.gate == MaeGate::uniform) return {f};
    if (mae_.training == MaeTraining::joint) return {Pass{UpdatePass::joint, ExpertChoice::mixture}};
    if (epoch % bcd_.g_every == bcd_.g_offset) return {Pass{UpdatePass::gates, ExpertChoice::mixture}, f};
    return {f};
  }

  const ParameterStore::Ranges& main_ranges() const override { return main_ranges_; }

  double side_step(ParameterStore& store, const Pass& pass, double grad_scale) override {
    MOE_CHECK(pass.kind == UpdatePass::gates, "mae schedule: unexpected side pass ", enum_name(pass.kind));
    return gate_opt_->step(store, gate_ranges_, gate_lr_, 0, grad_scale);
  }

  void after_main_step(ParameterStore& store, const Pass& pass, double grad_scale) override {
    if (pass.kind == UpdatePass::joint && !gate_ranges_.empty())  // the gates learn from the same gradients
      gate_opt_->step(store, gate_ranges_, gate_lr_, 0, grad_scale);
  }

 private:
  MaeOptions mae_;
  BcdSchedule bcd_;
  double gate_lr_;
  ParameterStore::Ranges gate_ranges_, main_ranges_;
  std::unique_ptr<Optimizer> gate_opt_;  // its state is not checkpointed: plain SGD keeps none
};
}  // namespace

std::unique_ptr<UpdateSchedule> mae_schedule(const Model& model, ParameterStore& store, const TrainOptions& o) {
  const YAML::Node config = model.config_yaml();
  if (site_type(config["attention"], "mha") != "mae") return nullptr;
  MOE_CHECK(config["heads"], "mae schedule: the model configuration has MAE attention but no 'heads'");
  return std::make_unique<MaeSchedule>(MaeOptions::from_yaml(config["attention"], config["heads"].as<int>()), store, o);
}

}  // namespace moe
