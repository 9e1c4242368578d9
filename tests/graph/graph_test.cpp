// The expression graph: lazy forward, backward accumulation, inference mode, error messages.
#include <catch2/catch.hpp>

#include "graph/expr/unary.h"
#include "graph/graph.h"

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
