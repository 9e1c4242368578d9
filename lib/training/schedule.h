// Learning-rate schedules, as pure functions of the update number u (1-based: the u-th update).
//   warm-up (all kinds): lr * u / warmup for u <= warmup (warmup = 0: no warm-up);
//   inverse_sqrt: lr * sqrt(warmup / u) after the warm-up (fairseq; lr from u = 1 when warmup = 0);
//   cosine: min_lr + (lr - min_lr) * (1 + cos(pi * t)) / 2, t = (u - warmup) / (max_updates - warmup);
//   linear: lr - (lr - min_lr) * t;   fixed: lr.
// Every kind except fixed is floored at min_lr after the warm-up; past max_updates cosine/linear stay
// at min_lr. Stateless, so resuming needs only the update count. Covered by tests/training/schedule_test.cpp.
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
  int64_t max_updates = 0;  // cosine/linear decay length (required > warmup for them)
};

class LrSchedule {
 public:
  /// Validates the options; errors name the key (train.schedule, train.warmup_updates, ...).
  explicit LrSchedule(ScheduleOptions options);
  /// The learning rate of update u (u >= 1; u = 0 is treated as 1).
  double at(int64_t update) const;
  const ScheduleOptions& options() const { return o_; }

 private:
  ScheduleOptions o_;
};

}  // namespace moe
