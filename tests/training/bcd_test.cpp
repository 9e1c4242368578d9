// BCD schedule for MAE (lib/training/bcd.h): G then F in every g_every-th epoch, F otherwise; the
// uniform-gate and joint variants; the offset; invalid schedules.
#include "training/bcd.h"

#include <catch2/catch.hpp>

using namespace moe;

namespace {
MaeOptions named(const std::string& name) {
  return MaeOptions::from_yaml(YAML::Load("{type: mae, name: " + name + "}"), 8);
}
using Steps = std::vector<std::string>;
}  // namespace

TEST_CASE("bcd: MAE takes G steps every fifth epoch and F steps always", "[training][bcd]") {
  const BcdSchedule s;
  for (const std::string name : {"MAE-7", "MAE-6"}) {
    INFO(name);
    const MaeOptions o = named(name);
    for (int64_t e = 1; e <= 15; ++e) CHECK(mae_updates(o, s, e) == (e % 5 == 0 ? Steps{"G", "F"} : Steps{"F"}));
    CHECK(mae_updates(o, s, 0) == Steps{"G", "F"});  // 0-based counting makes the first epoch a G epoch
  }
  const BcdSchedule shifted{5, 1};  // with 0-based epochs: G in 1, 6, 11
  CHECK(mae_updates(named("MAE-7"), shifted, 1) == Steps{"G", "F"});
  CHECK(mae_updates(named("MAE-7"), shifted, 5) == Steps{"F"});
  CHECK(mae_updates(named("MAE-7"), BcdSchedule{1, 0}, 3) == Steps{"G", "F"});
}

TEST_CASE("bcd: variants map to their steps", "[training][bcd]") {
  for (int64_t e : {0, 4, 5}) {
    CHECK(mae_updates(named("UNI-MAE-7"), {}, e) == Steps{"F"});
    CHECK(mae_updates(named("UNI-MAE-6"), {}, e) == Steps{"F"});
    CHECK(mae_updates(named("NOBCD-7"), {}, e) == Steps{"joint"});
  }
  CHECK_THROWS_WITH(mae_updates(named("MAE-7"), BcdSchedule{0, 0}, 1), Catch::Contains("g_every 0"));
  CHECK_THROWS_WITH(mae_updates(named("MAE-7"), BcdSchedule{5, 5}, 1), Catch::Contains("g_offset 5"));
  CHECK_THROWS_WITH(mae_updates(named("MAE-7"), {}, -1), Catch::Contains("epoch -1"));
}
