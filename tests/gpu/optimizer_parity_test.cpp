// CPU-vs-CUDA parity of the fused optimizer kernels (aligned float4 path and unaligned scalar
// path, odd sizes), sum_squares, all_finite, and the Optimizer class on a GPU parameter store.
// Skipped without a GPU.
#include <catch2/catch.hpp>

#include "ops/optimizer.h"
#include "support/parity.h"
#include "training/optimizer.h"

using namespace moe;

namespace {
Tensor rnd(int64_t n, uint32_t seed, double lo, double hi) {
  return test::random_tensor(Shape{n}, seed, lo, hi, DType::f32);
}
std::vector<double> host(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("optimizer kernels parity", "[gpu][optimizer]") {
  for (int64_t n : {1, 7, 1000, 1000003}) {
    for (int64_t skew : {0, 1}) {
      INFO("n=" << n << " skew=" << skew);
      const int64_t total = n + skew;
      Tensor p = rnd(total, 1, -1, 1), g = rnd(total, 2, -1, 1), m = rnd(total, 3, -0.1, 0.1),
             v = rnd(total, 4, 0, 0.1);
      std::vector<double> res[2][3];
      double ss[2];
      for (int dev = 0; dev < 2; ++dev) {
        const Device d = dev ? Device::cuda(0) : Device::cpu();
        Tensor P = p.to(d), G = g.to(d), M = m.to(d), V = v.to(d);
        auto view = [&](const Tensor& t) { return t.flat_range(skew, n); };
        adam_update(view(P), view(G), view(M), view(V), 1e-2f, 0.9f, 0.98f, 1e-6f, 0.1f, false, 3, 0.7f);
        adam_update(view(P), view(G), view(M), view(V), 1e-2f, 0.9f, 0.98f, 1e-6f, 0.1f, true, 4, 0.7f);
        sgd_update(view(P), view(G), view(M), 0.1f, 0.9f, 0.01f, false, 1.3f);
        sgd_update(view(P), view(G), view(V), 0.1f, 0.99f, 0.01f, true, 1.3f, 0.5f);
        sgd_update(view(P), view(G), Tensor(), 0.1f, 0.f, 0.f, false);
        res[dev][0] = host(P);
        res[dev][1] = host(M);
        res[dev][2] = host(V);
        ss[dev] = sum_squares(view(G));
        CHECK(all_finite(view(G)));
        Tensor bad = G.flat_range(total - 1, 1);
        bad.copy_from(Tensor::from_vector(std::vector<float>{INFINITY}, Shape{1}, Device::cpu()));
        CHECK_FALSE(all_finite(view(G)));
      }
      for (int k = 0; k < 3; ++k) CHECK(test::rel_error(res[1][k], res[0][k]) < 1e-6);
      CHECK(ss[1] == Approx(ss[0]).epsilon(1e-5));
    }
  }
}

TEST_CASE("Optimizer parity on a GPU parameter store", "[gpu][optimizer]") {
  for (const char* name : {"adam", "adamw", "sgd", "nag"}) {
    INFO(name);
    std::vector<double> vals[2];
    double norms[2] = {0, 0};
    for (int dev = 0; dev < 2; ++dev) {
      ParameterStore store(dev ? Device::cuda(0) : Device::cpu(), 5);
      store.declare("w", Shape{33, 17}, Init::uniform(-1, 1), "main");
      store.declare("e", Shape{100}, Init::uniform(-1, 1), "frozen");
      store.allocate();
      store.set_trainable([](const ParamEntry& e) { return e.group == "frozen"; }, false);
      OptimizerOptions o;
      o.weight_decay = 0.01;
      auto opt = Optimizer::create(name, o);
      for (int step = 0; step < 3; ++step) {
        Tensor gw = store.grad("w"), ge = store.grad("e");
        gw.copy_from(test::random_tensor(gw.shape(), 40 + step, -1, 1, DType::f32));
        ge.copy_from(test::random_tensor(ge.shape(), 50 + step, -1, 1, DType::f32));
        norms[dev] += opt->step(store, 0.05 / (step + 1), 5.0, 0.5);
      }
      vals[dev] = store.values().to_vector<double>();
    }
    CHECK(norms[1] == Approx(norms[0]).epsilon(1e-5));
    CHECK(test::rel_error(vals[1], vals[0]) < 1e-6);
  }
}
