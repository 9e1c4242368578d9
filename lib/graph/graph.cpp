// graph.h and node.h implementation: node bookkeeping, lazy forward, reverse-mode backward. An out-of-memory
// error in a node names it (op, shape, dtype, size): tests/graph/out_of_memory_test.cpp.
#include "graph/graph.h"

#include "ops/unary.h"
#include "tensor/allocator.h"

namespace moe {

const Shape& Expr::shape() const { return node_->shape; }
DType Expr::dtype() const { return node_->dtype; }
Graph& Expr::graph() const { return *node_->graph; }

const Tensor& Expr::val() const {
  MOE_CHECK(node_->computed, "the value of node '", node_->op, "' is not computed yet: call graph.forward() first");
  return node_->val;
}

const Tensor& Expr::grad() const { return node_->grad; }

Tensor& Node::alloc_val() {
  val = Tensor::empty(shape, dtype, graph->device());
  return val;
}

Tensor& Node::ensure_grad() {
  if (grad.defined()) return grad;
  if (grad_alias_child >= 0)
    grad = grad_of(grad_alias_child).view(shape);
  else
    grad = Tensor::zeros(shape, dtype, graph->device());
  return grad;
}

Tensor& Node::grad_of(int i) {
  Node& c = children[static_cast<size_t>(i)].node();
  MOE_CHECK(c.requires_grad, "op '", op, "' asked for the gradient of child ", i, " ('", c.op, "'), which takes none");
  return c.ensure_grad();
}

Graph::Graph(Device device, ParameterStore* params, GraphOptions options)
    : device_(device), params_(params), options_(options) {
  MOE_CHECK(!params_ || params_->device() == device_, "graph on ", device_, " given parameters on ", params_->device());
}

ParameterStore& Graph::params() {
  MOE_CHECK(params_, "this graph has no parameter store");
  return *params_;
}

Expr Graph::add(std::string op, const Shape& shape, DType dtype, std::vector<Expr> children, NodeFn forward,
                NodeFn backward, int grad_alias_child) {
  auto node = std::make_shared<Node>();
  node->op = std::move(op);
  node->shape = shape;
  node->dtype = dtype;
  node->graph = this;
  node->id = next_id_++;
  node->forward = std::move(forward);
  node->grad_alias_child = grad_alias_child;
  for (const Expr& c : children) {
    MOE_CHECK(c.defined(), "op '", node->op, "': an input expression is undefined");
    MOE_CHECK(&c.graph() == this, "op '", node->op, "': an input belongs to another graph");
    node->requires_grad = node->requires_grad || c->requires_grad;
  }
  node->children = std::move(children);
  if (!options_.training) {
    node->requires_grad = false;
    run(*node);
    node->children.clear();  // no tape: let inputs be freed as soon as nobody else holds them
    node->forward = nullptr;
    return Expr(node);
  }
  if (node->requires_grad) node->backward = std::move(backward);
  tape_.push_back(node);
  return Expr(node);
}

namespace {
/// An out-of-memory error while computing `what` of `node`, with the node named: its op, shape and size.
[[noreturn]] void out_of_memory_in(const Node& node, const char* what, const OutOfMemory& e) {
  throw OutOfMemory(detail::concat(what, " of op '", node.op, "' (", node.shape, " ", dtype_name(node.dtype), ", ",
                                   format_bytes(static_cast<size_t>(node.shape.numel()) * dtype_size(node.dtype)),
                                   "): ", e.what()));
}
}  // namespace

void Graph::run(Node& node) {
  try {
    node.forward(node);
  } catch (const OutOfMemory& e) {
    out_of_memory_in(node, "computing the value", e);
  }
  MOE_CHECK(node.val.defined(), "op '", node.op, "' produced no value");
  MOE_CHECK(node.val.shape() == node.shape && node.val.dtype() == node.dtype, "op '", node.op, "' produced ",
            node.val.shape(), " ", dtype_name(node.val.dtype()), " but declared ", node.shape, " ",
            dtype_name(node.dtype));
  node.computed = true;
}

Expr Graph::param(const std::string& name, const Shape& shape, const Init& init, const std::string& group) {
  ParameterStore& store = params();
  const int index = store.declare(name, shape, init, group);
  return store_leaf(index, options_.training && store.entry(index).trainable);
}

Expr Graph::state(const std::string& name, const Shape& shape, const Init& init) {
  return store_leaf(params().declare_state(name, shape, init), false);
}

Expr Graph::store_leaf(int index, bool trainable) {
  ParameterStore& store = params();
  const ParamEntry& e = store.entry(index);
  if (!options_.training && store.has_pending()) store.allocate();
  auto bind = [&store, index, trainable](Node& n) {
    n.val = store.value(index);
    if (trainable) n.grad = store.grad(index);
  };
  // A leaf: it has no children, so requires_grad comes from the store's trainable flag.
  auto node = std::make_shared<Node>();
  node->op = (e.state ? "state:" : "param:") + e.name;
  node->shape = e.shape;
  node->dtype = DType::f32;
  node->graph = this;
  node->id = next_id_++;
  node->requires_grad = trainable;
  node->param_index = trainable ? index : -1;
  node->forward = bind;
  if (!options_.training) {
    run(*node);
    return Expr(node);
  }
  tape_.push_back(node);
  return Expr(node);
}

Expr Graph::input(const Tensor& value, bool requires_grad) {
  auto node = std::make_shared<Node>();
  node->op = "input";
  node->shape = value.shape();
  node->dtype = value.dtype();
  node->graph = this;
  node->id = next_id_++;
  node->requires_grad = requires_grad && options_.training;
  node->val = value.device() == device_ ? value : value.to(device_);
  node->computed = true;
  if (options_.training) tape_.push_back(node);
  return Expr(node);
}

void Graph::forward() {
  if (!options_.training) return;
  if (params_ && params_->has_pending()) params_->allocate();
  for (; computed_upto_ < tape_.size(); ++computed_upto_) {
    Node& n = *tape_[computed_upto_];
    if (!n.computed) run(n);
  }
}

void Graph::backward(const Expr& loss, double scale) {
  MOE_CHECK(options_.training, "backward() on an inference graph (it keeps no tape)");
  MOE_CHECK(&loss.graph() == this, "backward(): the loss belongs to another graph");
  MOE_CHECK(loss.shape().numel() == 1, "backward(): the loss must have one element, not shape ", loss.shape());
  if (!device_.is_cuda()) return backward_from(loss, Tensor::scalar(scale, loss.dtype(), device_).view(loss.shape()));
  // On a GPU the seed is written by the device (zeros, then 0 x + scale), not uploaded: an upload from
  // pageable memory waits for the stream, and a CUDA graph cannot capture it.
  Tensor seed = Tensor::zeros(loss.shape(), loss.dtype(), device_);
  unary_forward(UnaryOp::scale, seed, seed, 0.f, static_cast<float>(scale));
  backward_from(loss, seed);
}

void Graph::backward_from(const Expr& out, const Tensor& out_grad) {
  MOE_CHECK(options_.training, "backward() on an inference graph (it keeps no tape)");
  MOE_CHECK(out->requires_grad, "backward(): the output does not depend on any trainable parameter or input");
  MOE_CHECK(out_grad.shape() == out.shape() && out_grad.dtype() == out.dtype(), "backward(): seed gradient ",
            out_grad.shape(), " ", dtype_name(out_grad.dtype()), " does not match the output ", out.shape(), " ",
            dtype_name(out.dtype()));
  forward();
  Node& root = out.node();
  if (root.grad_alias_child >= 0) {  // a view: its gradient is its child's, so add the seed there
    accumulate(root.ensure_grad(), out_grad.device() == device_ ? out_grad : out_grad.to(device_));
  } else {
    root.grad = out_grad.device() == device_ ? out_grad.clone() : out_grad.to(device_);
  }
  std::vector<size_t> first_use;  // per parameter index: its first leaf on the tape (hook only)
  if (param_grad_hook_) {
    for (size_t i = tape_.size(); i-- > 0;) {
      const int p = tape_[i]->param_index;
      if (p < 0) continue;
      if (first_use.size() <= static_cast<size_t>(p)) first_use.resize(static_cast<size_t>(p) + 1, SIZE_MAX);
      first_use[static_cast<size_t>(p)] = i;
    }
  }
  for (size_t i = tape_.size(); i-- > 0;) {
    Node& n = *tape_[i];
    if (n.param_index >= 0 && param_grad_hook_ && first_use[static_cast<size_t>(n.param_index)] == i)
      param_grad_hook_(n.param_index);
    if (!n.requires_grad || !n.grad.defined() || !n.backward) continue;
    try {
      n.backward(n);
    } catch (const OutOfMemory& e) {
      out_of_memory_in(n, "computing the gradients", e);
    }
  }
}

}  // namespace moe
