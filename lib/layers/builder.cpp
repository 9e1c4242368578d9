// builder.h implementation.
#include "layers/builder.h"

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/unary.h"

namespace moe {

Builder Builder::sub(const std::string& scope) const {
  Builder b = *this;  // shares the aux-loss list
  b.prefix_ = name(scope);
  return b;
}

Builder Builder::layer(int index, const char* scope) const {
  std::string leaf = scope;  // appended, not "l" + std::to_string(i): GCC 12 warns falsely about that
  leaf += std::to_string(index);
  return sub(leaf);
}

Expr Builder::param(const std::string& leaf, const Shape& shape, const Init& init, const std::string& group) const {
  return graph_->param(name(leaf), shape, init, group);
}

Expr Builder::weight(const std::string& leaf, const Shape& shape, const Init& init, const std::string& group) const {
  return cast(param(leaf, shape, init, group), dtype());
}

Expr Builder::state(const std::string& leaf, const Shape& shape, const Init& init) const {
  return graph_->state(name(leaf), shape, init);
}

void Builder::add_aux_loss(const std::string& leaf, const Expr& value) const { aux_->push_back({name(leaf), value}); }

Expr Builder::objective(const Expr& loss, int64_t tokens) const {
  Expr total = loss;
  for (const AuxLoss& aux : *aux_) total = add(total, scale(aux.value, static_cast<float>(tokens)));
  return total;
}

}  // namespace moe
