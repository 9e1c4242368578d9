// decoder.h implementation: the default output restriction (the shortlist's rows of the output weight, gathered
// once per decoding) and whether a model has that weight, the default alignment (none) and a language model's first
// input. Covered by tests/translator/shortlist_test.cpp, tests/translator/alignment_test.cpp and (lm_step_tokens)
// tests/translator/lm_generation_test.cpp.
#include "models/decoder.h"

#include "common/error.h"
#include "graph/expr/cast.h"
#include "graph/expr/gather_scatter.h"

namespace moe {

void Decoder::restrict_output(const Builder& b, DecoderState& state, const Tensor& columns) const {
  const Expr w = output_weight(b);
  MOE_CHECK(w.defined(), "this model has no output layer whose vocabulary a shortlist can restrict");
  MOE_CHECK(columns.dtype() == DType::i32 && columns.shape().ndim() == 1 && columns.numel() >= 1,
            "restrict_output: the output entries must be a non-empty i32 vector, got ", columns.shape());
  state.output_rows = cast(index_select(w, b.graph().input(columns)), b.dtype()).val();
}

Tensor lm_step_tokens(const Tensor& prev, bool first, int32_t eos_id) {
  if (!first) return prev;
  return Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(prev.numel()), eos_id), prev.shape(),
                             prev.device());
}

bool has_output_weight(const Decoder& d, ParameterStore& params) {
  Graph g(params.device(), &params, GraphOptions{.training = false});
  return d.output_weight(Builder(g)).defined();
}

Expr Decoder::alignment(const Builder&, const Tensor&, const Tensor&, const Tensor&) const {
  MOE_FAIL("this model has no attention over a source sentence, so it cannot give word alignments");
}

}  // namespace moe
