// Learning-rate schedules, as pure functions of the update number u (1-based: the u-th update).
//   warm-up (all kinds): lr * u / warmup for u <= warmup (warmup = 0: no warm-up);
//   inverse_sqrt: lr * sqrt(warmup / u) after the warm-up (fairseq; lr from u = 1 when warmup = 0);
//     with hold_updates h: lr for warmup < u <= warmup + h, then lr * sqrt((warmup + h) / u) (the
//     sparsely-gated MoE paper's translation schedule, App. E: 2000 warm-up, 8000 constant);
//   cosine: min_lr + (lr - min_lr) * (1 + cos(pi * t)) / 2, t = (u - warmup) / (max_updates - warmup);
//   linear: lr - (lr - min_lr) * t;   fixed: lr.
// Every kind except fixed is floored at min_lr after the warm-up; past max_updates cosine/linear stay
// at min_lr. A recipe that gives epochs instead (train.max_epochs, max_updates 0) decays over the
// updates of its epochs, max_updates = max_epochs * updates per epoch, which the trainer counts from
// the data (over_epochs). Stateless, so resuming needs only the update count.
// Covered by tests/training/schedule_test.cpp and tests/training/recipes_start_test.cpp.
#pragma once
#include <cstdint>
#include <string>

#include "common/named_enum.h"

namespace moe {

MOE_NAMED_ENUM(LrScheduleKind, inverse_sqrt, cosine, fixed, linear)

struct ScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::inverse_sqrt;
  double lr = 5e-4;
  double min_lr = 0;
  int64_t warmup_updates = 4000;
  int64_t max_updates = 0;   // cosine/linear decay length (> warmup; or 0 with max_epochs)
  int64_t max_epochs = 0;    // cosine/linear with max_updates 0: decay over these epochs' updates
  int64_t hold_updates = 0;  // inverse_sqrt: constant lr for this many updates after the warm-up
};

class LrSchedule {
 public:
  /// Validates the options; errors name the key (train.schedule, train.warmup_updates, ...).
  explicit LrSchedule(ScheduleOptions options);
  /// The learning rate of update u (u >= 1; u = 0 is treated as 1).
  double at(int64_t update) const;
  const ScheduleOptions& options() const { return o_; }
  /// Whether the decay length is still to be counted from the data (cosine/linear over max_epochs).
  bool needs_updates_per_epoch() const;
  /// This schedule decaying over max_epochs * updates_per_epoch updates. When the data gives no more
  /// updates than the warm-up, training ends while warming up (the decay is then one update long).
  LrSchedule over_epochs(int64_t updates_per_epoch) const;

 private:
  ScheduleOptions o_;
};

}  // namespace moe
