// Graph::set_param_grad_hook (what data-parallel training overlaps its gradient all-reduce with): each
// trainable parameter is reported once per backward, after every contribution to its gradient (a
// parameter used at the start and at the end of the tape is reported last), frozen ones never.
#include <catch2/catch.hpp>
#include <map>

#include "graph/expr/binary.h"
#include "graph/expr/reduce.h"
#include "graph/graph.h"

using namespace moe;

TEST_CASE("graph: the parameter-gradient hook reports complete gradients", "[graph][params]") {
  ParameterStore store(Device::cpu(), 5);
  store.declare("f", Shape{3}, Init::uniform(-1, 1));
  store.set_trainable([](const ParamEntry& e) { return e.name == "f"; }, false);
  Graph g(Device::cpu(), &store);
  const Expr a = g.param("a", Shape{3}, Init::uniform(-1, 1));  // used first and last
  const Expr b = g.param("b", Shape{3}, Init::uniform(-1, 1));
  const Expr f = g.param("f", Shape{3}, Init::uniform(-1, 1));  // frozen: no gradient, never reported
  const Expr x = g.input(Tensor::from_vector(std::vector<float>{1, 2, 3}, Shape{3}));
  const Expr a2 = g.param("a", Shape{3}, Init::uniform(-1, 1));
  const Expr loss = sum_all((a * x * b + f) * a2);
  std::vector<int> order;
  std::map<int, std::vector<float>> at_report;
  g.set_param_grad_hook([&](int p) {
    order.push_back(p);
    at_report[p] = store.grad(p).to_vector<float>();
  });
  g.backward(loss);
  const int ia = store.find("a"), ib = store.find("b");
  CHECK(order == std::vector<int>{ib, ia});  // a's first use is the earliest: reported last
  for (int p : {ia, ib}) CHECK(at_report[p] == store.grad(p).to_vector<float>());  // nothing added later
  // a's gradient holds both uses: d/da sum(a x b a) = 2 a x b (+ f's term, f * 1 per element).
  const auto va = store.value(ia).to_vector<float>(), vb = store.value(ib).to_vector<float>(),
             vf = store.value(store.find("f")).to_vector<float>(), ga = store.grad(ia).to_vector<float>();
  for (size_t i = 0; i < 3; ++i)
    CHECK(ga[i] == Approx(2 * va[i] * float(i + 1) * vb[i] + vf[i]));
}
