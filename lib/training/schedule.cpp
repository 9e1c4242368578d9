// schedule.h implementation: warm-up, then inverse_sqrt / cosine / linear / fixed decay.
// Covered by tests/training/schedule_test.cpp.
#include "training/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/error.h"

namespace moe {

LrSchedule::LrSchedule(ScheduleOptions options) : o_(std::move(options)) {
  const LrScheduleKind k = o_.kind;
  MOE_CHECK(o_.lr > 0 && std::isfinite(o_.lr), "train.lr must be a positive number, got ", o_.lr);
  MOE_CHECK(o_.min_lr >= 0 && o_.min_lr <= o_.lr, "train.min_lr (", o_.min_lr, ") must be in [0, train.lr = ", o_.lr,
            "]");
  MOE_CHECK(o_.warmup_updates >= 0, "train.warmup_updates must be >= 0, got ", o_.warmup_updates);
  MOE_CHECK(o_.hold_updates >= 0 && (o_.hold_updates == 0 || k == LrScheduleKind::inverse_sqrt), "train.hold_updates (",
            o_.hold_updates, ") must be >= 0, and 0 unless train.schedule is inverse_sqrt");
  if (k == LrScheduleKind::cosine || k == LrScheduleKind::linear)
    MOE_CHECK(o_.max_updates > o_.warmup_updates || (o_.max_updates == 0 && o_.max_epochs > 0), "train.schedule ",
              enum_name(k), " decays over train.max_updates (", o_.max_updates,
              "), which must exceed train.warmup_updates (", o_.warmup_updates,
              "), or over train.max_epochs when train.max_updates is 0");
}

bool LrSchedule::needs_updates_per_epoch() const {
  return (o_.kind == LrScheduleKind::cosine || o_.kind == LrScheduleKind::linear) && o_.max_updates == 0;
}

LrSchedule LrSchedule::over_epochs(int64_t updates_per_epoch) const {
  MOE_CHECK(updates_per_epoch > 0, "train.schedule ", enum_name(o_.kind), ": an epoch of the training data gives ",
            updates_per_epoch, " updates");
  ScheduleOptions o = o_;
  o.max_updates = std::max(o.max_epochs * updates_per_epoch, o.warmup_updates + 1);
  return LrSchedule(o);
}

double LrSchedule::at(int64_t update) const {
  const double u = static_cast<double>(std::max<int64_t>(update, 1));
  const double w = static_cast<double>(o_.warmup_updates);
  if (o_.warmup_updates > 0 && u <= w) return o_.lr * u / w;
  if (o_.kind == LrScheduleKind::fixed) return o_.lr;
  MOE_CHECK(!needs_updates_per_epoch(), "LrSchedule: the decay over train.max_epochs has no length yet (over_epochs)");
  double lr = o_.lr;
  if (o_.kind == LrScheduleKind::inverse_sqrt) {
    const double decay_from = w + static_cast<double>(o_.hold_updates);
    lr = u <= decay_from ? o_.lr : o_.lr * std::sqrt(std::max(decay_from, 1.0) / u);
  } else {
    const double t = std::min(1.0, (u - w) / (static_cast<double>(o_.max_updates) - w));
    lr = o_.kind == LrScheduleKind::cosine
             ? o_.min_lr + (o_.lr - o_.min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * t))
             : o_.lr - (o_.lr - o_.min_lr) * t;
  }
  return std::max(lr, o_.min_lr);
}

}  // namespace moe
