// Optimizer kernels and the Optimizer class: Adam/AdamW against hand-computed two-step examples,
// SGD and fairseq-NAG formulas, sum_squares / all_finite, gradient clipping, grad_scale, skipped
// non-finite steps, ranges stepped outside the norm and the clipping (set_unclipped), frozen groups
// bit-identical, state save/load (into an optimizer that stepped too), step() as set_step_inputs +
// queue_step + last_norm (the step the device makes on its own), and error messages.
#include "ops/optimizer.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "training/optimizer.h"

using namespace moe;

namespace {
Tensor vec(std::vector<float> v) { return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}); }
}  // namespace

TEST_CASE("adam_update: two hand-computed steps (Adam, L2 Adam, AdamW)", "[ops][optimizer]") {
  Tensor p = vec({1.f, 2.f, 2.f}), m = vec({0, 0, 0}), v = vec({0, 0, 0});
  // Element 0: plain Adam. Elements 1-2 are updated separately below with weight decay.
  Tensor p0 = p.flat_range(0, 1), m0 = m.flat_range(0, 1), v0 = v.flat_range(0, 1);
  adam_update(p0, vec({0.5f}), m0, v0, 0.1f, 0.9f, 0.999f, 1e-8f, 0.f, false, 1);
  CHECK(p0.item() == Approx(0.900000002).epsilon(1e-6));
  adam_update(p0, vec({-0.25f}), m0, v0, 0.1f, 0.9f, 0.999f, 1e-8f, 0.f, false, 2);
  CHECK(p0.item() == Approx(0.8733662987078463).epsilon(1e-6));
  CHECK(m0.item() == Approx(0.02).epsilon(1e-6));
  CHECK(v0.item() == Approx(0.00031225).epsilon(1e-4));  // 1 - 0.999f is inexact in f32

  Tensor p1 = p.flat_range(1, 1), m1 = m.flat_range(1, 1), v1 = v.flat_range(1, 1);
  Tensor p2 = p.flat_range(2, 1), m2 = m.flat_range(2, 1), v2 = v.flat_range(2, 1);
  for (int64_t step : {1, 2}) {
    adam_update(p1, vec({0.5f}), m1, v1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.1f, false, step);
    adam_update(p2, vec({1.0f}), m2, v2, 0.1f, 0.9f, 0.999f, 1e-8f, 0.1f, true, step, 0.5f);  // grad_scale
  }
  CHECK(p1.item() == Approx(1.8000400943590456).epsilon(1e-6));
  CHECK(p2.item() == Approx(1.7612000039800009).epsilon(1e-6));
}

TEST_CASE("sgd_update: momentum SGD and fairseq NAG", "[ops][optimizer]") {
  Tensor p = vec({1.f}), buf = vec({0.f});
  sgd_update(p, vec({0.5f}), buf, 0.1f, 0.9f, 0.01f, false);
  CHECK(p.item() == Approx(0.949).epsilon(1e-6));
  sgd_update(p, vec({0.5f}), buf, 0.1f, 0.9f, 0.01f, false);
  CHECK(buf.item() == Approx(0.96849).epsilon(1e-6));
  CHECK(p.item() == Approx(0.852151).epsilon(1e-6));
  // Plain SGD: no buffer needed.
  Tensor q = vec({1.f, -1.f});
  sgd_update(q, vec({2.f, 4.f}), Tensor(), 0.5f, 0.f, 0.f, false, 0.5f);
  CHECK(q.to_vector<double>() == std::vector<double>{0.5, -2.0});
  // NAG with a learning-rate change (lr_correct = 0.05 / 0.1).
  Tensor r = vec({1.f}), rbuf = vec({0.f});
  sgd_update(r, vec({0.5f}), rbuf, 0.1f, 0.9f, 0.01f, true);
  CHECK(r.item() == Approx(0.904).epsilon(1e-6));
  CHECK(rbuf.item() == Approx(-0.05).epsilon(1e-6));
  sgd_update(r, vec({-0.3f}), rbuf, 0.05f, 0.9f, 0.01f, true, 1.f, 0.5f);
  CHECK(r.item() == Approx(0.911798).epsilon(1e-6));
  CHECK(rbuf.item() == Approx(-0.0075).epsilon(1e-5));
}

TEST_CASE("sum_squares and all_finite", "[ops][optimizer]") {
  CHECK(sum_squares(vec({1, -2, 3, 0.5f, 2})) == Approx(18.25));
  CHECK(sum_squares(vec({})) == 0.0);
  CHECK(all_finite(vec({1, 2, 3})));
  CHECK_FALSE(all_finite(vec({1, NAN, 3})));
  CHECK_FALSE(all_finite(vec({INFINITY})));
  CHECK_THROWS_WITH(sum_squares(Tensor::zeros(Shape{3}, DType::f64, Device::cpu())),
                    Catch::Contains("sum_squares") && Catch::Contains("f64"));
  CHECK_THROWS_WITH(
      adam_update(vec({1, 2}), vec({1}), vec({0, 0}), vec({0, 0}), 0.1f, 0.9f, 0.999f, 1e-8f, 0, false, 1),
      Catch::Contains("adam_update") && Catch::Contains("grad") && Catch::Contains("[1]"));
}

namespace {
/// Two parameters "a" (group "main") and "b" (group "frozen") with set gradients.
struct Fixture {
  ParameterStore store{Device::cpu()};
  Fixture() {
    store.declare("a", Shape{3}, Init::from_values({1, 2, 3}), "main");
    store.declare("b", Shape{2}, Init::from_values({-1, 5}), "frozen");
    store.allocate();
    set_grads({3, 0, 0}, {0, 4});
  }
  void set_grads(std::vector<float> a, std::vector<float> b) {
    store.grad("a").copy_from(vec(a));
    store.grad("b").copy_from(vec(b));
  }
};
}  // namespace

TEST_CASE("Optimizer: norm, clipping and grad_scale", "[training][optimizer]") {
  Fixture f;
  OptimizerOptions o;
  o.momentum = 0;
  auto sgd = Optimizer::create("sgd", o);
  CHECK(sgd->step(f.store, 1.0, 2.5) == Approx(5.0));  // norm of (3,0,0,0,4); clipped to 2.5
  CHECK(f.store.value("a").to_vector<double>() == std::vector<double>{-0.5, 2, 3});
  CHECK(f.store.value("b").to_vector<double>() == std::vector<double>{-1, 3});
  f.set_grads({3, 0, 0}, {0, 4});
  CHECK(sgd->step(f.store, 1.0, 0, 0.5) == Approx(2.5));  // grad_scale 0.5, no clipping
  CHECK(f.store.value("a").to_vector<double>() == std::vector<double>{-2, 2, 3});
  CHECK(sgd->steps() == 2);
  // A non-finite gradient skips the update.
  f.set_grads({INFINITY, 0, 0}, {0, 0});
  CHECK_FALSE(std::isfinite(sgd->step(f.store, 1.0)));
  CHECK(f.store.value("a").to_vector<double>() == std::vector<double>{-2, 2, 3});
  CHECK(sgd->steps() == 2);
}

TEST_CASE("Optimizer: unclipped ranges are stepped outside the norm and the clipping", "[training][optimizer]") {
  Fixture f;
  OptimizerOptions o;
  o.momentum = 0;
  auto sgd = Optimizer::create("sgd", o);
  const ParameterStore::Ranges b = f.store.trainable_ranges([](const ParamEntry& e) { return e.name == "b"; });
  sgd->set_unclipped(b);
  f.set_grads({3, 0, 0}, {0, 40});
  CHECK(sgd->step(f.store, 1.0, 1.5) == Approx(3.0));  // the norm of "a" alone, clipped to 1.5
  CHECK(f.store.value("a").to_vector<double>() == std::vector<double>{-0.5, 2, 3});
  CHECK(f.store.value("b").to_vector<double>() == std::vector<double>{-1, -35});  // full step, not scaled by 1/2
  f.set_grads({3, 0, 0}, {0, 40});
  CHECK(sgd->step(f.store, 1.0, 0, 0.5) == Approx(1.5));  // grad_scale applies to both
  CHECK(f.store.value("b").to_vector<double>() == std::vector<double>{-1, -55});
  // A non-finite gradient in an unclipped range still skips the whole update.
  f.set_grads({3, 0, 0}, {NAN, 0});
  CHECK_FALSE(std::isfinite(sgd->step(f.store, 1.0)));
  CHECK(f.store.value("a").to_vector<double>() == std::vector<double>{-2, 2, 3});
  CHECK(sgd->steps() == 2);
  // The same with the norm and the clipping over both: "b" scaled like "a".
  Fixture g;
  auto plain = Optimizer::create("sgd", o);
  g.set_grads({3, 0, 0}, {0, 4});
  CHECK(plain->step(g.store, 1.0, 2.5) == Approx(5.0));
  CHECK(g.store.value("b").to_vector<double>() == std::vector<double>{-1, 3});
  CHECK_THROWS_WITH(plain->set_unclipped({{0, 8}, {4, 12}}),
                    Catch::Contains("set_unclipped") && Catch::Contains("[4, 12)"));
}

TEST_CASE("Optimizer: frozen groups stay bit-identical", "[training][optimizer]") {
  for (const char* name : {"adam", "adamw", "sgd", "nag"}) {
    INFO(name);
    Fixture f;
    OptimizerOptions o;
    o.weight_decay = 0.1;
    f.store.set_trainable([](const ParamEntry& e) { return e.group == "frozen"; }, false);
    const std::vector<float> before = f.store.value("b").to_vector<float>();
    auto opt = Optimizer::create(name, o);
    const double norm = opt->step(f.store, 0.1);
    opt->step(f.store, 0.1);
    CHECK(norm == Approx(3.0));  // only "a" counts
    const std::vector<float> after = f.store.value("b").to_vector<float>();
    CHECK(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)) == 0);
    CHECK(f.store.value("a").to_vector<double>()[0] < 1.0);
  }
}

TEST_CASE("Optimizer: state round trip reproduces the next step", "[training][optimizer]") {
  for (const char* name : {"adam", "nag"}) {
    INFO(name);
    Fixture a, b;
    auto opt_a = Optimizer::create(name), opt_b = Optimizer::create(name);
    opt_a->step(a.store, 0.1);
    opt_a->step(a.store, 0.05);
    std::map<std::string, Tensor> saved;
    for (const auto& [k, t] : opt_a->state()) saved[k] = t.clone();
    CHECK(saved.at("step").item() == 2);
    Tensor dst = b.store.values();
    dst.copy_from(a.store.values());
    // c has stepped already: load_state writes its step count and lr_old into the scalars it holds.
    Fixture c;
    auto opt_c = Optimizer::create(name);
    opt_c->step(c.store, 0.3);
    Tensor(c.store.values()).copy_from(a.store.values());
    opt_b->load_state(saved);
    opt_c->load_state(saved);
    CHECK(opt_b->steps() == 2);
    CHECK(opt_c->steps() == 2);
    opt_a->step(a.store, 0.05);
    opt_b->step(b.store, 0.05);
    opt_c->step(c.store, 0.05);
    CHECK(a.store.values().to_vector<float>() == b.store.values().to_vector<float>());
    CHECK(a.store.values().to_vector<float>() == c.store.values().to_vector<float>());
  }
  CHECK_THROWS_WITH(Optimizer::create("adagrad"), Catch::Contains("adagrad") && Catch::Contains("adamw"));
  CHECK_THROWS_WITH(Optimizer::create("adam")->load_state({}), Catch::Contains("step"));
}

TEST_CASE("Optimizer: set_step_inputs and queue_step are step() without its wait", "[training][optimizer]") {
  for (const char* name : {"adam", "nag"}) {
    INFO(name);
    Fixture a, b;
    auto opt_a = Optimizer::create(name), opt_b = Optimizer::create(name);
    CHECK_THROWS_WITH(opt_b->queue_step(b.store, b.store.trainable_ranges()), Catch::Contains("set_step_inputs"));
    for (int i = 0; i < 3; ++i) {
      a.set_grads({3, 0, i == 1 ? NAN : 1.f}, {0, 4});  // the second is skipped
      b.set_grads({3, 0, i == 1 ? NAN : 1.f}, {0, 4});
      const double norm = opt_a->step(a.store, 0.1 * (i + 1), 2.0, 0.5);
      opt_b->set_step_inputs(b.store, 0.1 * (i + 1), 0.5);
      opt_b->queue_step(b.store, b.store.trainable_ranges(), 2.0);
      if (i == 1)
        CHECK_FALSE(std::isfinite(opt_b->last_norm()));
      else
        CHECK(opt_b->last_norm() == norm);
      CHECK(a.store.values().to_vector<float>() == b.store.values().to_vector<float>());
    }
    CHECK(opt_b->steps() == 2);
  }
}
