// Embedding expression operator: out = scale * table[ids], shape ids.shape + [D]; the table (an
// f32 master parameter, or bf16) may be read into another output dtype (bf16 training without a
// cast of the whole table). Gradient flows to the table only. Math in lib/ops/embedding.h.
// Covered by tests/ops/embedding_test.cpp and tests/gpu/embedding_parity_test.cpp.
#pragma once
#include <optional>

#include "graph/graph.h"

namespace moe {

/// out_dtype defaults to the table's dtype.
Expr embedding(const Expr& table, const Expr& ids, float scale = 1.f, std::optional<DType> out_dtype = {});
/// Same, with the ids given as a tensor (made a graph input).
Expr embedding(const Expr& table, const Tensor& ids, float scale = 1.f, std::optional<DType> out_dtype = {});

}  // namespace moe
