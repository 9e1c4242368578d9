// The expression graph: lazy forward, backward accumulation, inference mode, error messages, the
// parameter store (flat buffers, deterministic init, state entries, values from a loaded tensor).
#include "graph/graph.h"

#include <catch2/catch.hpp>

#include "graph/expr/binary.h"
#include "graph/expr/unary.h"

using namespace moe;

TEST_CASE("graph: lazy forward and backward through a chain", "[graph]") {
  Graph g(Device::cpu());
  Expr x = g.input(Tensor::from_vector(std::vector<double>{0.5, -1, 2}, Shape{3}), true);
  Expr y = square(tanh(x));
  CHECK_THROWS_WITH(y.val(), Catch::Contains("not computed yet"));
  g.forward();
  const auto v = y.val().to_vector<double>();
  CHECK(v[0] == Approx(std::pow(std::tanh(0.5), 2)));
  g.backward_from(y, Tensor::from_vector(std::vector<double>{1, 1, 1}, Shape{3}));
  const auto d = x.grad().to_vector<double>();
  const double t = std::tanh(0.5);
  CHECK(d[0] == Approx(2 * t * (1 - t * t)));
}

TEST_CASE("graph: a value used twice accumulates both gradients", "[graph]") {
  Graph g(Device::cpu());
  Expr x = g.input(Tensor::from_vector(std::vector<double>{3}, Shape{1}), true);
  Expr a = scale(x, 2);
  Expr b = scale(x, 5);
  g.forward();
  g.backward_from(a, Tensor::from_vector(std::vector<double>{1}, Shape{1}));
  g.backward_from(b, Tensor::from_vector(std::vector<double>{1}, Shape{1}));
  // The second pass re-runs a's backward too (its seed stays); what matters: 5 was added.
  CHECK(x.grad().to_vector<double>()[0] >= 7);
}

TEST_CASE("graph: inference mode computes eagerly and keeps no tape", "[graph]") {
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  Expr x = g.input(Tensor::from_vector(std::vector<float>{-1, 2}, Shape{2}), true);
  Expr y = relu(x);
  CHECK(y.val().to_vector<float>() == std::vector<float>{0, 2});
  CHECK(g.tape_size() == 0);
  CHECK_THROWS_WITH(g.backward(y), Catch::Contains("inference"));
}

TEST_CASE("graph: parameters live in the store's flat buffers", "[graph][params]") {
  ParameterStore store(Device::cpu(), 3);
  Graph g(Device::cpu(), &store);
  Expr w = g.param("layer.w", Shape{2, 3}, Init::uniform(-1, 1), "main");
  Expr gate = g.param("layer.gate", Shape{4}, Init::constant(0.5), "gate");
  Expr y = scale(w, 2);
  g.forward();
  CHECK(store.values().numel() >= 10);
  CHECK(gate.val().to_vector<float>() == std::vector<float>(4, 0.5f));
  g.backward_from(y, Tensor::from_vector(std::vector<float>(6, 1.f), Shape{2, 3}));
  CHECK(store.grad("layer.w").to_vector<float>() == std::vector<float>(6, 2.f));
  // Same seed and name => same initial values, whatever else was declared before.
  ParameterStore other(Device::cpu(), 3);
  other.declare("zzz", Shape{7}, Init::normal(0, 1));
  other.declare("layer.w", Shape{2, 3}, Init::uniform(-1, 1), "main");
  other.allocate();
  CHECK(other.value("layer.w").to_vector<float>() == store.value("layer.w").to_vector<float>());
  CHECK_THROWS_WITH(store.declare("layer.w", Shape{3, 2}, Init::zeros()),
                    Catch::Contains("layer.w") && Catch::Contains("[3,2]") && Catch::Contains("[2,3]"));
}

TEST_CASE("graph: state entries take no gradient and are never trainable", "[graph][params][state]") {
  ParameterStore store(Device::cpu(), 3);
  Graph g(Device::cpu(), &store);
  Expr w = g.param("bn.g", Shape{2}, Init::ones(), "gate");
  Expr s = g.state("bn.mean", Shape{2}, Init::constant(0.25));
  CHECK_FALSE(s->requires_grad);
  Expr y = w * s;
  g.forward();
  CHECK(s.val().to_vector<float>() == std::vector<float>{0.25f, 0.25f});
  g.backward_from(y, Tensor::from_vector(std::vector<float>{1, 1}, Shape{2}));
  CHECK_FALSE(s.grad().defined());
  const ParamEntry& e = store.entry(store.find("bn.mean"));
  CHECK(e.state);
  CHECK(e.group == "state");
  CHECK_FALSE(e.trainable);
  CHECK(store.count() == 2);  // state is not counted as parameters
  // Selecting every entry for training (a fine-tuning mode) leaves state alone.
  CHECK(store.set_trainable([](const ParamEntry&) { return true; }, true) == 1);
  CHECK_FALSE(store.entry(store.find("bn.mean")).trainable);
  for (const auto& [begin, end] : store.trainable_ranges()) CHECK((e.offset + 2 <= begin || e.offset >= end));
  // A checkpoint loader declares every tensor as a plain parameter; declaring it as state marks it.
  ParameterStore loaded(Device::cpu(), 3);
  loaded.declare("bn.mean", Shape{2}, Init::from_values({1.f, 2.f}));
  loaded.allocate();
  Graph g2(Device::cpu(), &loaded, GraphOptions{.training = false});
  Expr s2 = g2.state("bn.mean", Shape{2}, Init::zeros());
  CHECK(s2.val().to_vector<float>() == std::vector<float>{1.f, 2.f});
  CHECK(loaded.entry(0).state);
  CHECK_FALSE(loaded.entry(0).trainable);
  CHECK_THROWS_WITH(g2.state("bn.mean", Shape{3}, Init::zeros()), Catch::Contains("bn.mean"));
}

// A checkpoint's tensors initialise the parameters without an intermediate copy, and the store lets go of them
// once the values are in its buffer (decoding a d 512 model held 185 MB of such copies for its whole run).
TEST_CASE("graph: parameters take a loaded tensor's values and release it", "[graph][params]") {
  const Tensor loaded = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  ParameterStore store(Device::cpu());
  store.declare("w", Shape{2, 3}, Init::from_tensor(loaded));
  CHECK(store.entry(0).init.tensor.shares_storage(loaded));  // held, not copied, until allocate()
  store.allocate();
  CHECK(store.value(0).to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK_FALSE(store.value(0).shares_storage(loaded));
  CHECK_FALSE(store.entry(0).init.tensor.defined());
  Tensor out = Tensor::empty(Shape{2, 3}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(run_init(store.entry(0).init, "w", 1, out),
                    Catch::Contains("'w': its initial values were released"));
  ParameterStore wrong(Device::cpu());
  wrong.declare("v", Shape{3, 2}, Init::from_tensor(loaded));
  CHECK_THROWS_WITH(wrong.allocate(), Catch::Contains("parameter 'v': initial values of shape [2,3]"));
}
