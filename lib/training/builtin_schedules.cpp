// The registered update schedules, one line each, asked in order; the plain schedule applies when none
// does. A new schedule adds its own file and one line here. Covered by tests/training/bcd_trainer_test.cpp.
#include "training/update_schedule.h"

namespace moe {

const std::vector<ScheduleFactory>& schedule_factories() {
  static const std::vector<ScheduleFactory> factories = {
      mae_schedule,
  };
  return factories;
}

std::unique_ptr<UpdateSchedule> make_update_schedule(const Model& model, ParameterStore& store, const TrainOptions& o) {
  for (const ScheduleFactory& f : schedule_factories())
    if (auto s = f(model, store, o)) return s;
  return plain_schedule(store);
}

}  // namespace moe
