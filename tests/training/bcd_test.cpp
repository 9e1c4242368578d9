// MAE's update schedule (lib/training/mae_schedule.cpp, block coordinate descent): G then F in every
// g_every-th epoch, F otherwise; the uniform-gate and joint variants; the offset; invalid schedules; the
// schedule registry's choice (MAE models get it, others the plain one-pass schedule); the warning for a
// run too short to reach the G passes (update_schedule.h, unreached_pass_warning).
#include <catch2/catch.hpp>

#include "../layers/mae_test_util.h"
#include "graph/graph.h"
#include "models/transformer_model.h"
#include "training/update_schedule.h"

using namespace moe;

namespace {
using Steps = std::vector<std::string>;

/// The schedule moe-train makes for a tiny MAE (or plain) Transformer with the BCD settings `bcd`.
struct Scheduled {
  TransformerModel model;
  ParameterStore store{Device::cpu(), 1};
  std::unique_ptr<UpdateSchedule> schedule;
  Scheduled(const std::string& attention, BcdSchedule bcd = {}) : model(test::tiny_mt(attention)) {
    {
      Graph g(Device::cpu(), &store, GraphOptions{.training = true});
      const std::vector<int32_t> one = {4};
      model.loss(Builder(g),
                 data::make_batch({std::span<const int32_t>(one)}, {std::span<const int32_t>(one)}, {0}, 0, 2, 3), 0.f);
    }
    store.allocate();
    TrainOptions o;
    o.bcd = bcd;
    schedule = make_update_schedule(model, store, o);
  }
  Steps steps(int64_t epoch) const {
    Steps out;
    for (const Pass& p : schedule->passes(epoch)) out.push_back(enum_name(p.kind));
    return out;
  }
};
}  // namespace

TEST_CASE("bcd: MAE takes G steps every fifth epoch and F steps always", "[training][bcd]") {
  for (const std::string name : {"MAE-3", "MAE-2"}) {
    INFO(name);
    const Scheduled s("{type: mae, name: " + name + "}");
    for (int64_t e = 1; e <= 15; ++e) CHECK(s.steps(e) == (e % 5 == 0 ? Steps{"G", "F"} : Steps{"F"}));
    CHECK(s.steps(0) == Steps{"G", "F"});  // 0-based counting makes the first epoch a G epoch
    CHECK(s.schedule->passes(1).back().experts == ExpertChoice::sample);  // F: one expert drawn per gate
    CHECK(s.schedule->passes(5).front().experts == ExpertChoice::mixture);
  }
  CHECK(Scheduled("{type: mae}", BcdSchedule{5, 1}).steps(1) == Steps{"G", "F"});  // with 0-based epochs: 1, 6, 11
  CHECK(Scheduled("{type: mae}", BcdSchedule{5, 1}).steps(5) == Steps{"F"});
  CHECK(Scheduled("{type: mae}", BcdSchedule{1, 0}).steps(3) == Steps{"G", "F"});
}

TEST_CASE("bcd: variants map to their steps; other models get the plain schedule", "[training][bcd]") {
  const Scheduled uni3("{type: mae, name: UNI-MAE-3}"), uni2("{type: mae, name: UNI-MAE-2}"),
      nobcd("{type: mae, name: NOBCD-3}");
  for (int64_t e : {0, 4, 5}) {
    CHECK(uni3.steps(e) == Steps{"F"});
    CHECK(uni2.steps(e) == Steps{"F"});
    CHECK(nobcd.steps(e) == Steps{"joint"});
  }
  CHECK_THAT(nobcd.schedule->describe(), Catch::Contains("NOBCD-3"));
  const Scheduled plain("{type: mha}");
  CHECK(plain.steps(5) == Steps{"plain"});
  CHECK(plain.schedule->main_ranges() == plain.store.trainable_ranges());
  CHECK_THROWS_WITH(Scheduled("{type: mae}", BcdSchedule{0, 0}), Catch::Contains("g_every (0)"));
  CHECK_THROWS_WITH(Scheduled("{type: mae}", BcdSchedule{5, 5}), Catch::Contains("g_offset (5)"));
  CHECK_THROWS_WITH(Scheduled("{type: mae}").steps(-1), Catch::Contains("epoch -1"));
}

TEST_CASE("bcd: a run that ends before the first G epoch is warned about", "[training][bcd]") {
  const Scheduled mae("{type: mae, name: MAE-3}");  // G passes in epochs 5, 10, ...
  CHECK_THAT(unreached_pass_warning(*mae.schedule, 2), Catch::Contains("first runs its G passes in epoch 5, after this run's 2 epoch(s)"));
  CHECK_THAT(unreached_pass_warning(*mae.schedule, 4), Catch::Contains("this run's 4 epoch(s)"));
  CHECK(unreached_pass_warning(*mae.schedule, 5).empty());
  CHECK(unreached_pass_warning(*mae.schedule, int64_t(1) << 40).empty());  // a long run: no scan of its epochs
  CHECK(unreached_pass_warning(*Scheduled("{type: mae}", BcdSchedule{1, 0}).schedule, 1).empty());
  CHECK(unreached_pass_warning(*Scheduled("{type: mae, name: UNI-MAE-3}").schedule, 1).empty());  // F only
  CHECK(unreached_pass_warning(*Scheduled("{type: mha}").schedule, 1).empty());
}
