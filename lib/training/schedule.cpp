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
  if (k == LrScheduleKind::cosine || k == LrScheduleKind::linear)
    MOE_CHECK(o_.max_updates > o_.warmup_updates, "train.schedule ", enum_name(k), " decays over train.max_updates (",
              o_.max_updates, "), which must exceed train.warmup_updates (", o_.warmup_updates, ")");
}

double LrSchedule::at(int64_t update) const {
  const double u = static_cast<double>(std::max<int64_t>(update, 1));
  const double w = static_cast<double>(o_.warmup_updates);
  if (o_.warmup_updates > 0 && u <= w) return o_.lr * u / w;
  if (o_.kind == LrScheduleKind::fixed) return o_.lr;
  double lr = o_.lr;
  if (o_.kind == LrScheduleKind::inverse_sqrt) {
    lr = o_.lr * std::sqrt(std::max(w, 1.0) / u);
  } else {
    const double t = std::min(1.0, (u - w) / (static_cast<double>(o_.max_updates) - w));
    lr = o_.kind == LrScheduleKind::cosine
             ? o_.min_lr + (o_.lr - o_.min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * t))
             : o_.lr - (o_.lr - o_.min_lr) * t;
  }
  return std::max(lr, o_.min_lr);
}

}  // namespace moe
