// update_schedule.h implementation: the base class and the plain schedule.
// Covered by tests/training/resume_test.cpp.
#include "training/update_schedule.h"

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

}  // namespace moe
