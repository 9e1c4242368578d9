// A whole training update captured in a CUDA graph (tensor/cuda_graph.h) and replayed equals the same
// updates run directly: a small model (a dense layer into an MoE FFN layer, noisy top-2 of 4 experts),
// its forward, backward and Adam step with clip_norm active, for 4 batches of which one carries a
// non-finite gradient. The optimizer reads lr and grad_scale (new every update) from its scalars on the
// device, clips by the norm it reduced there and skips the update there: the skipped update leaves the
// parameters, the moments and the step count of both runs as they were, and after the 3 updates made
// both runs hold the same parameters, moments and step count. On the emulator and on a GPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "graph/expr/binary.h"
#include "graph/expr/matmul.h"
#include "graph/expr/reduce.h"
#include "graph/expr/unary.h"
#include "graph/graph.h"
#include "layers/moe_ffn.h"
#include "support/parity.h"
#include "tensor/cuda_graph.h"
#include "training/optimizer.h"

using namespace moe;

namespace {
constexpr int64_t N = 24, d = 8, h = 16, kBatches = 4, kBadBatch = 2;
constexpr double kClip = 0.01;

MoeOptions moe_options() {
  MoeOptions opt;
  opt.dim = d, opt.experts = 4, opt.k = 2, opt.hidden = h;
  return opt;
}

/// Batch b's rows x [N, d] and its probe [1]: 0, or infinity in the bad batch (its gradient is the probe).
Tensor batch_x(int b, Device device) { return test::random_tensor(Shape{N, d}, 100 + b, -1, 1, DType::f32).to(device); }
Tensor batch_probe(int b, Device device) {
  const float v = b == kBadBatch ? std::numeric_limits<float>::infinity() : 0.f;
  return Tensor::from_vector(std::vector<float>{v}, Shape{1}, device);
}
double lr_of(int b) { return 0.01 * (b + 1); }
double grad_scale_of(int b) { return 1.0 / (b + 2); }

/// The update's graph over the store: loss = sum(moe(x w_in)^2) / N + 0.1 (CV(importance)^2 + CV(load)^2)
/// + sum(probe * w_probe).
struct Update {
  Graph g;
  Expr x, probe, loss;
  Update(ParameterStore& store, const Tensor& xv, const Tensor& pv)
      : g(store.device(), &store, GraphOptions{.training = true}) {
    x = g.input(xv);
    probe = g.input(pv);
    MoeWeights w;
    w.w_gate = g.param("gate", Shape{d, 4}, Init::uniform(-0.5, 0.5));
    w.w_noise = g.param("noise", Shape{d, 4}, Init::uniform(-0.5, 0.5));
    w.experts.layers = {g.param("w1", Shape{4, d, h}, Init::uniform(-0.5, 0.5)),
                        g.param("w2", Shape{4, h, d}, Init::uniform(-0.5, 0.5))};
    const Expr hid = matmul(x, g.param("w_in", Shape{d, d}, Init::uniform(-0.5, 0.5)));
    const MoeOutput out = moe_forward(hid, w, moe_options(), GateNoise{true, 17, 3}, GateNoise{}, true);
    loss = mul_scalar(sum_all(square(out.y)), 1.f / N) + mul_scalar(out.importance_loss + out.load_loss, 0.1f) +
           sum_all(probe * g.param("w_probe", Shape{1}, Init::constant(0.5)));
  }
  void run(ParameterStore& store) {
    g.forward();
    store.zero_grads();
    g.backward(loss);
  }
};

struct Run {
  ParameterStore store;
  std::unique_ptr<Optimizer> opt = Optimizer::create("adam");
  explicit Run(Device device) : store(device, 7) {
    Update declare(store, batch_x(0, device), batch_probe(0, device));  // declares the parameters
    store.allocate();
  }
  std::vector<double> values() const { return store.values().to_vector<double>(); }
  std::vector<double> moment(const char* key) const { return opt->state().at(key).to_vector<double>(); }
};
}  // namespace

TEST_CASE("an update captured in a CUDA graph equals the direct updates, skip included", "[gpu][optimizer][graph]") {
  const Device gpu = Device::cuda(0);
  Run direct(gpu), captured(gpu);
  REQUIRE(direct.values() == captured.values());

  // The graph: one update's forward, backward and optimizer step, recorded once over fixed input tensors.
  const Tensor x = batch_x(0, gpu), probe = batch_probe(0, gpu);
  Update update(captured.store, x, probe);
  captured.opt->set_step_inputs(captured.store, lr_of(0), grad_scale_of(0));  // creates the state: not recorded
  const ParameterStore::Ranges ranges = captured.store.trainable_ranges();
  CudaGraph graph(gpu, [&] {
    update.run(captured.store);
    captured.opt->queue_step(captured.store, ranges, kClip);
  });

  std::vector<double> before = direct.values();
  for (int b = 0; b < kBatches; ++b) {
    INFO("batch " << b);
    std::vector<double> m_direct, m_captured;  // the moments before the bad batch
    if (b == kBadBatch) m_direct = direct.moment("adam.m"), m_captured = captured.moment("adam.m");
    Update u(direct.store, batch_x(b, gpu), batch_probe(b, gpu));
    u.run(direct.store);
    const double norm = direct.opt->step(direct.store, ranges, lr_of(b), kClip, grad_scale_of(b));

    Tensor(x).copy_from(batch_x(b, gpu));
    Tensor(probe).copy_from(batch_probe(b, gpu));
    captured.opt->set_step_inputs(captured.store, lr_of(b), grad_scale_of(b));
    graph.launch();
    const double replayed = captured.opt->last_norm();

    const std::vector<double> after = direct.values();
    if (b == kBadBatch) {
      CHECK_FALSE(std::isfinite(norm));
      CHECK_FALSE(std::isfinite(replayed));
      CHECK(after == before);  // skipped: nothing moved, in either run
      CHECK(direct.moment("adam.m") == m_direct);
      CHECK(captured.moment("adam.m") == m_captured);
      CHECK(direct.opt->steps() == b);
      CHECK(captured.opt->steps() == b);
    } else {
      CHECK(norm > kClip);  // the clipping acts
      CHECK(replayed == Approx(norm).epsilon(1e-5));
      CHECK(test::rel_error(after, before) > 1e-4);
    }
    CHECK(test::rel_error(captured.values(), after) < 1e-5);
    before = after;
  }
  CHECK(direct.opt->steps() == kBatches - 1);
  CHECK(captured.opt->steps() == kBatches - 1);
  CHECK(test::rel_error(captured.moment("adam.m"), direct.moment("adam.m")) < 1e-5);
  CHECK(test::rel_error(captured.moment("adam.v"), direct.moment("adam.v")) < 1e-5);
}
