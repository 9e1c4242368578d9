// ensemble_decoder.h implementation. Covered by tests/translator/ensemble_test.cpp.
#include "models/ensemble_decoder.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "graph/expr/binary.h"

namespace moe {

namespace {
/// One member's decoding: its graph over its parameters, a builder on it and its state.
struct MemberRun {
  std::unique_ptr<Graph> graph;
  Builder builder;
  std::unique_ptr<DecoderState> state;
};

struct EnsembleState : DecoderState {
  std::vector<MemberRun> runs;
  void reorder(const Builder&, const Tensor& origin) override {
    for (MemberRun& r : runs) r.state->reorder(r.builder, origin);
  }
};

/// A graph over `m`'s parameters with the settings of b's graph, and a builder on it with b's context.
MemberRun member_run(const Builder& b, const EnsembleMember& m) {
  auto graph = std::make_unique<Graph>(b.graph().device(), m.params, b.graph().options());
  Builder mb(*graph);
  mb.context() = b.context();
  return {std::move(graph), mb, nullptr};
}
}  // namespace

EnsembleDecoder::EnsembleDecoder(std::vector<EnsembleMember> members) : members_(std::move(members)) {
  MOE_CHECK(!members_.empty(), "ensemble: no model given");
  const EnsembleMember& first = members_.front();
  MOE_CHECK(!first.fused, "ensemble: the first model, '", first.name, "', is a fused language model");
  spec_ = first.decoder->spec();
  double total = 0;
  for (const EnsembleMember& m : members_) {
    MOE_CHECK(std::isfinite(m.weight) && m.weight > 0, "ensemble: the weight of '", m.name,
              "' must be a positive number, got ", m.weight);
    if (!m.fused) total += m.weight;
    const DecoderSpec s = m.decoder->spec();
    MOE_CHECK(s.vocab == spec_.vocab, "ensemble: '", m.name, "' has a target vocabulary of ", s.vocab, " tokens but '",
              first.name, "' has ", spec_.vocab, "; ensembled models need the same target vocabulary");
    MOE_CHECK(s.pad_id == spec_.pad_id && s.bos_id == spec_.bos_id && s.eos_id == spec_.eos_id, "ensemble: '", m.name,
              "' has the special ids pad ", s.pad_id, ", <s> ", s.bos_id, ", </s> ", s.eos_id, " but '", first.name,
              "' has ", spec_.pad_id, ", ", spec_.bos_id, ", ", spec_.eos_id);
    MOE_CHECK(m.params->device() == first.params->device(), "ensemble: '", m.name, "' is on ", m.params->device(),
              " but '", first.name, "' on ", first.params->device());
    spec_.max_positions = std::min(spec_.max_positions, s.max_positions);
  }
  for (const EnsembleMember& m : members_)
    weights_.push_back(static_cast<float>(m.fused ? m.weight : m.weight / total));
}

std::unique_ptr<DecoderState> EnsembleDecoder::start(const Builder& b, const Tensor& src,
                                                     const Tensor& src_mask) const {
  auto state = std::make_unique<EnsembleState>();
  for (const EnsembleMember& m : members_) {
    MemberRun run = member_run(b, m);
    run.state = m.decoder->start(run.builder, src, src_mask);
    state->runs.push_back(std::move(run));
  }
  return state;
}

Expr EnsembleDecoder::alignment(const Builder& b, const Tensor& src, const Tensor& src_mask,
                                const Tensor& tgt_in) const {
  const MemberRun run = member_run(b, members_.front());
  return b.graph().input(members_.front().decoder->alignment(run.builder, src, src_mask, tgt_in).val());
}

Expr EnsembleDecoder::step(const Builder& b, DecoderState& state, const Tensor& prev) const {
  auto& runs = static_cast<EnsembleState&>(state).runs;
  Expr sum;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Tensor logp = members_[i].decoder->step(runs[i].builder, *runs[i].state, prev).val();
    const Expr term = mul_scalar(b.graph().input(logp), weights_[i]);
    sum = i == 0 ? term : sum + term;
  }
  return sum;
}

void EnsembleDecoder::restrict_output(const Builder&, DecoderState& state, const Tensor& columns) const {
  auto& runs = static_cast<EnsembleState&>(state).runs;
  for (size_t i = 0; i < runs.size(); ++i)
    members_[i].decoder->restrict_output(runs[i].builder, *runs[i].state, columns);
}

}  // namespace moe
