// guided_alignment.h implementation. Covered by tests/training/guided_alignment_test.cpp and
// tests/training/guided_alignment_loss_test.cpp.
#include "training/guided_alignment.h"

#include <algorithm>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/reduce.h"
#include "graph/expr/unary.h"

namespace moe {

Expr guided_alignment_cost(const Builder& b, const Expr& weights, const Tensor& guidance,
                           const GuidedAlignmentOptions& o) {
  MOE_CHECK(weights.shape() == guidance.shape(), "guided alignment: attention weights ", weights.shape(),
            " but guidance ", guidance.shape());
  const auto input = [&](const std::vector<float>& values) {
    return b.graph().input(Tensor::from_vector(values, guidance.shape(), b.graph().device(), weights.dtype()));
  };
  const std::vector<float> g = guidance.to_vector<float>();
  Expr cost;
  if (o.cost == GuidedAlignmentCost::ce) {
    cost = mul_scalar(sum_all(mul(input(g), log(add_scalar(weights, 1e-6f)))), static_cast<float>(-o.weight));
  } else {
    // Rows without links do not count: their attention may go anywhere.
    std::vector<float> linked(g.size(), 0.f);
    const auto S = static_cast<size_t>(guidance.shape()[2]);
    for (size_t row = 0; row < g.size(); row += S)
      if (std::any_of(g.begin() + row, g.begin() + row + S, [](float w) { return w > 0; }))
        std::fill(linked.begin() + row, linked.begin() + row + S, 1.f);
    cost = mul_scalar(sum_all(mul(square(sub(weights, input(g))), input(linked))), static_cast<float>(o.weight / 2));
  }
  return cast(cost, DType::f32);
}

Expr loss_with_guided_alignment(const Model& model, const Builder& b, const data::Batch& batch, const data::Batch& cpu,
                                float label_smoothing, const data::WordAlignments& alignments,
                                const GuidedAlignmentOptions& o) {
  Expr weights;
  struct Restore {  // the context as it was, however model.loss ends
    BuildContext& context;
    Expr* before;
    ~Restore() { context.alignment = before; }
  } restore{b.context(), b.context().alignment};
  b.context().alignment = &weights;
  const Expr loss = model.loss(b, batch, label_smoothing);
  MOE_CHECK(weights.defined(), "guided alignment (data.train.alignment): model.type ", model.type(),
            " has no alignment head to guide");
  return add(loss, guided_alignment_cost(b, weights, alignments.guidance(cpu), o));
}

}  // namespace moe
