// Learning-rate schedules at chosen updates (hand-computed), their option checks, and the f16
// dynamic loss scaler (halve on overflow, double after a window of clean updates).
#include "training/schedule.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "common/error.h"
#include "training/loss_scaler.h"

using namespace moe;

namespace {
LrSchedule make(const std::string& kind, double lr, int64_t warmup, int64_t max_updates = 0, double min_lr = 0) {
  return LrSchedule(
      ScheduleOptions{parse_enum<LrScheduleKind>(kind, "train.schedule"), lr, min_lr, warmup, max_updates});
}
}  // namespace

TEST_CASE("schedule: inverse_sqrt warms up linearly, then decays as 1/sqrt(u)", "[training][schedule]") {
  const LrSchedule s = make("inverse_sqrt", 1e-3, 4);
  CHECK(s.at(1) == Approx(2.5e-4));
  CHECK(s.at(2) == Approx(5e-4));
  CHECK(s.at(4) == Approx(1e-3));
  CHECK(s.at(16) == Approx(5e-4));
  CHECK(s.at(100) == Approx(2e-4));
  CHECK(s.at(0) == Approx(2.5e-4));  // treated as update 1
  const LrSchedule no_warmup = make("inverse_sqrt", 1.0, 0);
  CHECK(no_warmup.at(1) == Approx(1.0));
  CHECK(no_warmup.at(4) == Approx(0.5));
  const LrSchedule floored = make("inverse_sqrt", 1.0, 1, 0, 0.25);
  CHECK(floored.at(4) == Approx(0.5));
  CHECK(floored.at(100) == Approx(0.25));  // 0.1 floored at min_lr
}

TEST_CASE("schedule: inverse_sqrt with a hold (the MoE paper's translation schedule)", "[training][schedule]") {
  ScheduleOptions o{LrScheduleKind::inverse_sqrt, 1.0, 0, 2, 0};
  o.hold_updates = 6;
  const LrSchedule s(o);
  CHECK(s.at(1) == Approx(0.5));
  CHECK(s.at(2) == Approx(1.0));
  CHECK(s.at(8) == Approx(1.0));   // warm-up 2 + hold 6
  CHECK(s.at(32) == Approx(0.5));  // sqrt(8 / 32)
  o.kind = LrScheduleKind::cosine;
  o.max_updates = 100;
  CHECK_THROWS_WITH(LrSchedule(o), Catch::Contains("train.hold_updates"));
}

TEST_CASE("schedule: cosine decays from lr to min_lr between warm-up and max_updates", "[training][schedule]") {
  const LrSchedule s = make("cosine", 1.0, 10, 110, 0.1);
  CHECK(s.at(5) == Approx(0.5));
  CHECK(s.at(10) == Approx(1.0));
  CHECK(s.at(35) == Approx(0.1 + 0.9 * (1 + std::cos(M_PI / 4)) / 2));  // t = 0.25
  CHECK(s.at(60) == Approx(0.55));                                      // t = 0.5
  CHECK(s.at(110) == Approx(0.1));
  CHECK(s.at(500) == Approx(0.1));
}

TEST_CASE("schedule: linear and fixed", "[training][schedule]") {
  const LrSchedule lin = make("linear", 1.0, 0, 100);
  CHECK(lin.at(1) == Approx(0.99));
  CHECK(lin.at(50) == Approx(0.5));
  CHECK(lin.at(100) == Approx(0.0).margin(1e-12));
  CHECK(lin.at(150) == Approx(0.0).margin(1e-12));
  const LrSchedule lin_warm = make("linear", 2.0, 10, 20, 1.0);
  CHECK(lin_warm.at(5) == Approx(1.0));
  CHECK(lin_warm.at(15) == Approx(1.5));
  const LrSchedule fixed = make("fixed", 0.3, 2);
  CHECK(fixed.at(1) == Approx(0.15));
  CHECK(fixed.at(2) == Approx(0.3));
  CHECK(fixed.at(1000) == Approx(0.3));
}

TEST_CASE("schedule: a linear or cosine decay over train.max_epochs takes its length from the data",
          "[training][schedule]") {
  ScheduleOptions o{LrScheduleKind::linear, 1.0, 0, 10, 0};
  o.max_epochs = 3;
  const LrSchedule pending(o);
  CHECK(pending.needs_updates_per_epoch());
  CHECK_THROWS_WITH(pending.at(20), Catch::Contains("over_epochs"));
  CHECK(pending.at(5) == Approx(0.5));           // the warm-up needs no length
  const LrSchedule s = pending.over_epochs(40);  // 3 epochs of 40 updates
  CHECK_FALSE(s.needs_updates_per_epoch());
  CHECK(s.options().max_updates == 120);
  CHECK(s.at(65) == Approx(0.5));
  CHECK(s.at(120) == Approx(0.0).margin(1e-12));
  // Data smaller than the warm-up: training ends while warming up; the schedule stays defined.
  const LrSchedule tiny = pending.over_epochs(2);
  CHECK(tiny.options().max_updates == 11);
  CHECK(tiny.at(6) == Approx(0.6));
  CHECK_THROWS_WITH(pending.over_epochs(0), Catch::Contains("train.schedule linear"));
  ScheduleOptions fixed{LrScheduleKind::inverse_sqrt, 1.0, 0, 10, 0};
  fixed.max_epochs = 3;
  CHECK_FALSE(LrSchedule(fixed).needs_updates_per_epoch());  // inverse_sqrt has no length
}

TEST_CASE("schedule: option errors name the key", "[training][schedule]") {
  CHECK_THROWS_WITH(make("step", 1.0, 0), Catch::Contains("train.schedule") && Catch::Contains("'step'"));
  CHECK_THROWS_WITH(make("cosine", 1.0, 10, 0), Catch::Contains("train.max_updates") && Catch::Contains("max_epochs"));
  CHECK_THROWS_WITH(make("linear", 1.0, 10, 10), Catch::Contains("train.warmup_updates"));
  CHECK_THROWS_WITH(make("fixed", 0.0, 0), Catch::Contains("train.lr"));
  CHECK_THROWS_WITH(make("fixed", 1.0, 0, 0, 2.0), Catch::Contains("train.min_lr"));
  CHECK_THROWS_WITH(make("fixed", 1.0, -1), Catch::Contains("train.warmup_updates"));
}

TEST_CASE("loss scaler: halves on overflow, doubles after a clean window", "[training][loss_scaler]") {
  LossScaler s(true, 8.0, 3);
  CHECK(s.scale() == 8.0);
  CHECK(s.update(false));
  CHECK(s.update(false));
  CHECK(s.scale() == 8.0);
  CHECK(s.update(false));
  CHECK(s.scale() == 16.0);  // third clean update in a row
  CHECK_FALSE(s.update(true));
  CHECK(s.scale() == 8.0);
  CHECK(s.clean_updates() == 0);
  CHECK(s.update(false));
  CHECK(s.clean_updates() == 1);
  s.restore(4.0, 2);
  CHECK(s.update(false));
  CHECK(s.scale() == 8.0);
  LossScaler one(true, 1.0, 3);
  CHECK_FALSE(one.update(true));
  CHECK(one.scale() == 1.0);  // never below 1

  LossScaler off(false, 32768.0, 2000);
  CHECK(off.scale() == 1.0);
  CHECK(off.update(false));
  CHECK_FALSE(off.update(true));
  CHECK(off.scale() == 1.0);
  off.restore(64.0, 5);
  CHECK(off.scale() == 1.0);
}
