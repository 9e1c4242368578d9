// Node and Expr: the pieces of the lazy expression graph (Marian style).
// A Node is one operation: its output shape and dtype (known when the node is created), its
// children, and two closures. forward(node) computes node.val from the children's values;
// backward(node) *adds* the node's gradient contribution into each child's gradient (obtained with
// grad_of(i), which allocates a zeroed buffer on first use). The i-th child's gradient is only
// touched when wants_grad(i). A node may alias its gradient to a child's (views such as reshape),
// in which case it needs no backward at all.
// Covered by tests/graph/graph_test.cpp.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace moe {

class Graph;
struct Node;

/// A handle to a node; cheap to copy. Expression operators take and return Exprs.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<Node> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  Node* operator->() const { return node_.get(); }
  Node& node() const { return *node_; }
  const Shape& shape() const;
  DType dtype() const;
  Graph& graph() const;
  /// The computed value; an error before the graph has run forward.
  const Tensor& val() const;
  /// The accumulated gradient (undefined when nothing flowed into it).
  const Tensor& grad() const;

 private:
  std::shared_ptr<Node> node_;
};

using NodeFn = std::function<void(Node&)>;

struct Node {
  std::string op;
  Shape shape;
  DType dtype = DType::f32;
  std::vector<Expr> children;
  Tensor val;
  Tensor grad;
  NodeFn forward;
  NodeFn backward;
  Graph* graph = nullptr;
  int64_t id = 0;
  bool requires_grad = false;  // some parameter or input below it needs a gradient
  bool computed = false;
  int grad_alias_child = -1;   // >= 0: this node's gradient is a view of that child's gradient
  int param_index = -1;        // a trainable parameter's leaf: its index in the ParameterStore

  /// The value of child i.
  const Tensor& in(int i) const { return children[static_cast<size_t>(i)]->val; }
  /// Whether child i takes a gradient.
  bool wants_grad(int i) const { return children[static_cast<size_t>(i)]->requires_grad; }
  /// Child i's gradient buffer, zero-initialised on first use; backward closures add into it.
  Tensor& grad_of(int i);
  /// Allocates val with the node's shape and dtype on the graph's device and returns it.
  Tensor& alloc_val();
  /// Makes sure this node's own gradient buffer exists (zeroed, or aliased to a child's).
  Tensor& ensure_grad();
};

}  // namespace moe
