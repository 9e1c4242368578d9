// seq2seq_attention.h implementation. Shapes: B sentences, S source positions, n attention units.
// Covered by tests/models/lstm_seq2seq_layers_test.cpp.
#include "layers/seq2seq_attention.h"

#include <cmath>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/softmax.h"
#include "graph/expr/unary.h"
#include "layers/attention_layer.h"

namespace moe {

AttentionWeights attention_weights(const Builder& b, int64_t memory_dim, int64_t query_dim, int64_t n) {
  MOE_CHECK(memory_dim > 0 && query_dim > 0 && n > 0, b.name("u"), ": bad attention sizes memory ", memory_dim,
            ", query ", query_dim, ", units ", n);
  return AttentionWeights{b.weight("u", Shape{memory_dim, n}, Init::glorot_uniform()),
                          b.weight("w", Shape{query_dim, n}, Init::glorot_uniform()),
                          b.weight("v", Shape{n}, Init::normal(0, 1 / std::sqrt(static_cast<double>(n))))};
}

void AttentionMemory::reorder(const Tensor& origin) {
  Expr idx = values.graph().input(origin);
  values = index_select(values, idx);
  keys = index_select(keys, idx);
  mask = select_rows(mask, origin);
}

AttentionMemory attention_memory(const Expr& memory, const Tensor& mask, const AttentionWeights& w,
                                 AttentionFunction f) {
  MOE_CHECK(memory.shape().ndim() == 3 && memory.shape()[2] == w.u.shape()[0], "attention: memory ", memory.shape(),
            " does not fit U ", w.u.shape());
  const int64_t B = memory.shape()[0], S = memory.shape()[1];
  MOE_CHECK(!mask.defined() || mask.shape() == Shape({B, S}), "attention: mask ", mask.shape(), " for memory ",
            memory.shape());
  Expr keys = matmul(memory, w.u);  // [B, S, n]
  return AttentionMemory{memory, f == AttentionFunction::shazeer ? tanh(keys) : keys, mask, w, f};
}

Expr attention_probs(const AttentionMemory& m, const Expr& query) {
  const AttentionWeights& w = m.weights;
  const int64_t B = m.keys.shape()[0], S = m.keys.shape()[1], n = m.keys.shape()[2];
  MOE_CHECK(query.shape().ndim() == 2 && query.shape()[0] == B && query.shape()[1] == w.w.shape()[0],
            "attention: query ", query.shape(), " does not fit ", B, " sentences and W ", w.w.shape());
  Expr q = matmul(query, w.w);  // [B, n]
  Expr scores;                  // [B, 1, S]
  if (m.function == AttentionFunction::shazeer) {
    scores = matmul(reshape(mul(tanh(q), w.v), Shape{B, 1, n}), m.keys, false, true);
  } else {
    Expr hidden = tanh(add(m.keys, reshape(q, Shape{B, 1, n})));  // [B, S, n]
    scores = reshape(matmul(hidden, reshape(w.v, Shape{n, 1})), Shape{B, 1, S});
  }
  const DType acc = scores.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const Tensor mask = m.mask.defined() ? m.mask.view(Shape{B, 1, S}) : Tensor();
  return reshape(softmax(cast(scores, acc), mask), Shape{B, S});
}

Expr attention_context(const AttentionMemory& m, const Expr& query, Expr* probs) {
  const int64_t B = m.values.shape()[0], S = m.values.shape()[1], d = m.values.shape()[2];
  const Expr p_acc = attention_probs(m, query);
  if (probs) *probs = p_acc;
  Expr p = cast(p_acc, m.values.dtype());
  return reshape(matmul(reshape(p, Shape{B, 1, S}), m.values), Shape{B, d});
}

}  // namespace moe
