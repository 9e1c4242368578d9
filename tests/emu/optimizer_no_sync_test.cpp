// An optimizer step on a GPU (Optimizer::set_step_inputs + queue_step) makes no device-to-host copy and
// never waits for the device (the CUDA emulator counts both: moe_emu::host_traffic), so a CUDA graph can
// record it (tests/gpu/update_graph_test.cpp): the norm, the clip factor, the non-finite skip, the step
// count and every update run from the optimizer's scalars on the device. Adam, AdamW, SGD with momentum and
// NAG, with clipping and unclipped ranges, plain, ZeRO-sharded and partitioned (expert parallelism, its
// all-reduce of the own squared norm a device op); the norms they then report equal the CPU's.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "moe_emu/control.h"
#include "support/host_traffic.h"
#include "support/parity.h"
#include "tensor/cuda_runtime.h"
#include "training/optimizer.h"

using namespace moe;

namespace {
enum class Layout { plain, sharded, partitioned };

/// Parameters "a" [40], "t" [8] (stepped unclipped) and "e" [30] (partitioned: this rank's own).
struct Setup {
  ParameterStore store;
  std::unique_ptr<Optimizer> opt;
  int all_reduces = 0;
  Setup(Device device, const char* kind, Layout layout) : store(device, 3) {
    store.declare("a", Shape{40}, Init::uniform(-1, 1));
    store.declare("t", Shape{8}, Init::uniform(-1, 1));
    store.declare("e", Shape{30}, Init::uniform(-1, 1));
    store.allocate();
    OptimizerOptions o;
    o.weight_decay = 0.01;
    opt = Optimizer::create(kind, o);
    opt->set_unclipped(store.trainable_ranges([](const ParamEntry& e) { return e.name == "t"; }));
    if (layout == Layout::sharded) opt->set_shard(16, 60);
    if (layout == Layout::partitioned)
      opt->set_partitioned(store.trainable_ranges([](const ParamEntry& e) { return e.name == "e"; }),
                           [this](const Tensor& own) {  // one rank: the sum is its own, copied through the device
                             ++all_reduces;
                             Tensor(own).copy_from(own.clone());
                           });
  }
  void set_grads(uint32_t seed) {
    Tensor(store.grads()).copy_from(test::random_tensor(store.grads().shape(), seed, -1, 1, DType::f32));
  }
};
}  // namespace

TEST_CASE("an optimizer step on a GPU makes no copy to the host and no host wait", "[emu][optimizer][no_sync]") {
  const Device gpu = Device::cuda(0);
  for (const char* kind : {"adam", "adamw", "sgd", "nag"}) {
    for (Layout layout : {Layout::plain, Layout::sharded, Layout::partitioned}) {
      INFO(kind << ", layout " << static_cast<int>(layout));
      Setup on_gpu(gpu, kind, layout), on_cpu(Device::cpu(), kind, layout);
      for (int step = 0; step < 2; ++step) {
        on_gpu.set_grads(10 + step);
        on_cpu.set_grads(10 + step);
        cuda::synchronize(gpu.index);  // the test's uploads are not the step's
        const moe_emu::HostTraffic before = moe_emu::host_traffic();
        on_gpu.opt->set_step_inputs(on_gpu.store, 0.1 / (step + 1), 0.5);
        on_gpu.opt->queue_step(on_gpu.store, on_gpu.store.trainable_ranges(), 1.0);
        const test::Traffic t = test::traffic_since(before);
        INFO("step " << step << ": " << t.copies << " copies to the host, " << t.waits << " host waits");
        CHECK(t.copies == 0);
        CHECK(t.waits == 0);
        // ... and it computed the CPU's step: the same norm (clipped: above 1.0), the same parameters.
        const double norm = on_cpu.opt->step(on_cpu.store, 0.1 / (step + 1), 1.0, 0.5);
        CHECK(norm > 1.0);
        CHECK(on_gpu.opt->last_norm() == Approx(norm).epsilon(1e-6));
        CHECK(test::rel_error(on_gpu.store.values().to_vector<double>(), on_cpu.store.values().to_vector<double>()) <
              1e-6);
      }
      CHECK(on_gpu.opt->steps() == 2);
      CHECK(on_gpu.all_reduces == (layout == Layout::partitioned ? 2 : 0));
    }
  }
}
