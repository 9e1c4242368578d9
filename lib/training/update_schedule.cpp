// update_schedule.h implementation: the base class, the plain schedule and the warning for kinds of
// pass a run is too short to reach. Covered by tests/training/resume_test.cpp and
// tests/training/bcd_test.cpp (the warning).
#include "training/update_schedule.h"

#include <fmt/format.h>

#include <set>

#include "common/error.h"

namespace moe {

double UpdateSchedule::side_step(ParameterStore&, const Pass& pass, double) {
  MOE_FAIL("update schedule '", describe(), "' has no side pass ", enum_name(pass.kind));
}

namespace {
class PlainSchedule : public UpdateSchedule {
 public:
  explicit PlainSchedule(ParameterStore& store) : ranges_(store.trainable_ranges()) {}
  std::string describe() const override { return "one pass per update over every trainable parameter"; }
  std::vector<Pass> passes(int64_t) const override { return {Pass{}}; }
  const ParameterStore::Ranges& main_ranges() const override { return ranges_; }

 private:
  ParameterStore::Ranges ranges_;
};
}  // namespace

std::unique_ptr<UpdateSchedule> plain_schedule(ParameterStore& store) { return std::make_unique<PlainSchedule>(store); }

std::string unreached_pass_warning(const UpdateSchedule& schedule, int64_t epochs) {
  constexpr int64_t kHorizon = 1000;  // a kind of pass first run after this many epochs is not looked for
  if (epochs >= kHorizon) return "";
  std::set<UpdatePass> reached;
  for (int64_t e = 1; e <= epochs; ++e)
    for (const Pass& p : schedule.passes(e)) reached.insert(p.kind);
  for (int64_t e = epochs + 1; e <= kHorizon; ++e)
    for (const Pass& p : schedule.passes(e))
      if (!reached.count(p.kind))
        return fmt::format(
            "the update schedule first runs its {} passes in epoch {}, after this run's {} epoch(s): they never "
            "run, and what they train keeps its initial values",
            enum_name(p.kind), e, epochs);
  return "";
}

}  // namespace moe
