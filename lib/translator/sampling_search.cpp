// sampling_search.h implementation: the host keeps every sample (tokens, log-prob) and draws its next token from
// its row of the step's log-probabilities, the step's draws split over the threads (parallel_for). Covered by
// tests/translator/sampling_search_test.cpp.
#include "translator/sampling_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cpu_threads.h"
#include "common/error.h"
#include "tensor/philox.h"
#include "translator/repeated_ngrams.h"
#include "translator/target_prefix.h"
#include "translator/token_sampler.h"
#include "translator/unk_penalty.h"

namespace moe {

uint64_t sample_stream(const std::vector<int32_t>& source) {
  uint64_t h = 14695981039346656037ull;
  for (int32_t id : source)
    for (int byte = 0; byte < 4; ++byte) {
      h ^= (static_cast<uint32_t>(id) >> (8 * byte)) & 0xFFu;
      h *= 1099511628211ull;
    }
  return h;
}

namespace {
struct Sample {
  std::vector<int32_t> tokens;
  double log_prob = 0;
  std::vector<float> token_scores;  // each token's log-prob (Hypothesis::token_scores)
  bool done = false;
};

struct DrawScratch {
  std::vector<float> row;
  SamplerScratch sampler;
};
constexpr int32_t kNaNRow = -2;

/// The token a sample with `tokens` so far draws at step t from its scorer row `logp` [v] with Philox block `block`
/// of its input's stream: -1 when nothing may be drawn, kNaNRow when the row holds a NaN.
int32_t draw_token(const float* logp, int64_t v, const std::vector<int32_t>& tokens, uint64_t stream, int64_t block,
                   int64_t t, const BeamOptions& o, DrawScratch& scratch) {
  std::vector<float>& row = scratch.row;
  row.assign(logp, logp + v);
  if (std::any_of(row.begin(), row.end(), [](float x) { return std::isnan(x); })) return kNaNRow;
  row[o.pad_id] = row[o.bos_id] = -std::numeric_limits<float>::infinity();
  if (t < o.min_len) row[o.eos_id] = -std::numeric_limits<float>::infinity();
  for (int32_t banned : repeated_ngram_tokens(tokens, o.no_repeat_ngram_size))
    row[banned] = -std::numeric_limits<float>::infinity();
  if (o.unkpen != 0) row[o.unk_id] -= static_cast<float>(o.unkpen);
  float draw[4];  // two 24-bit lanes make one uniform number of 48 bits
  philox_uniform4(static_cast<uint64_t>(o.seed), stream, static_cast<uint64_t>(block), draw);
  const double u = draw[0] + static_cast<double>(draw[1]) / 16777216.0;
  return sample_token(row.data(), v, {o.temperature, o.sampling_topk, o.sampling_topp}, u, scratch.sampler);
}
}  // namespace

std::vector<std::vector<Hypothesis>> sampling_search(const std::vector<int64_t>& src_lengths,
                                                     const std::vector<uint64_t>& streams, const StepFn& step,
                                                     const ReorderFn& reorder, const BeamOptions& o,
                                                     const TargetPrefixes& prefixes) {
  MOE_CHECK(o.beam >= 1, "sampling: beam (samples per input) must be at least 1, got ", o.beam);
  MOE_CHECK(o.n_best >= 1 && o.n_best <= o.beam, "sampling: n-best ", o.n_best, " must be in [1, beam = ", o.beam, "]");
  MOE_CHECK(o.temperature > 0, "sampling: temperature must be > 0, got ", o.temperature);
  MOE_CHECK(streams.size() == src_lengths.size(), "sampling: ", streams.size(), " streams for ", src_lengths.size(),
            " inputs");
  const int64_t sentences = static_cast<int64_t>(src_lengths.size());
  std::vector<std::vector<Hypothesis>> finished(static_cast<size_t>(sentences));
  if (sentences == 0) return finished;
  const std::vector<int64_t> max_len = max_output_lengths(src_lengths, o, prefixes);

  std::vector<std::vector<Sample>> samples(static_cast<size_t>(sentences), std::vector<Sample>(o.beam));
  std::vector<int64_t> active(static_cast<size_t>(sentences));  // the inputs whose rows the scorer holds, in order
  for (int64_t s = 0; s < sentences; ++s) active[s] = s;
  int64_t rows_per = 1;  // rows per active input: 1 before the first step, then `beam`
  std::vector<int32_t> prev(active.size(), o.bos_id);

  // the scorer's row of sample j of the a-th active input: its input's one row at the first step
  const auto row_of = [&](size_t a, int64_t j) { return static_cast<int64_t>(a) * rows_per + (rows_per == 1 ? 0 : j); };
  for (int64_t t = 0; !active.empty(); ++t) {
    const int64_t n = static_cast<int64_t>(active.size()) * rows_per;
    const Tensor logp = step(Tensor::from_vector(prev, Shape{n}));
    MOE_CHECK(logp.defined() && logp.shape().ndim() == 2 && logp.shape()[0] == n,
              "sampling: the step function returned ", logp.shape(), " for ", n, " rows (expected [", n, ",V])");
    const int64_t v = logp.shape()[1];
    check_unk_penalty(o, v);
    // f32 rows on the CPU are read in place; from another device or dtype, through a host copy.
    const bool in_place = logp.device().is_cpu() && logp.dtype() == DType::f32;
    const std::vector<float> host = in_place ? std::vector<float>() : logp.to_vector<float>();
    const float* lp = in_place ? logp.data<float>() : host.data();
    // This step's draws (the samples going on, past their prefix, below their maximum length) over the threads:
    // each depends on its row and its Philox block only, so neither the threads nor their order change it.
    std::vector<std::pair<size_t, int64_t>> draws;  // (active input a, sample j)
    for (size_t a = 0; a < active.size(); ++a) {
      const int64_t s = active[a];
      if (forced_at(prefixes, s, t) || t >= max_len[s]) continue;
      for (int64_t j = 0; j < o.beam; ++j)
        if (!samples[s][j].done) draws.emplace_back(a, j);
    }
    std::vector<int32_t> drawn(active.size() * static_cast<size_t>(o.beam), -1);  // sample (a, j)'s token
    parallel_for(static_cast<int64_t>(draws.size()), std::max<int64_t>(1, kElementsPerThread / v),
                 [&](int64_t begin, int64_t end) {
                   DrawScratch scratch;
                   for (int64_t d = begin; d < end; ++d) {
                     const auto [a, j] = draws[d];
                     const int64_t s = active[a];
                     drawn[a * o.beam + j] = draw_token(lp + row_of(a, j) * v, v, samples[s][j].tokens, streams[s],
                                                        t * o.beam + j, t, o, scratch);
                   }
                 });
    for (const auto& [a, j] : draws)
      if (drawn[a * o.beam + j] == kNaNRow)
        MOE_FAIL("sampling: NaN log-probability at step ", t, " of input ", active[a]);
    std::vector<int64_t> next_active;
    std::vector<int32_t> origin, next_prev;
    for (size_t a = 0; a < active.size(); ++a) {
      const int64_t s = active[a];
      const bool in_prefix = forced_at(prefixes, s, t);
      for (int64_t j = 0; j < o.beam; ++j) {
        Sample& x = samples[s][j];
        if (x.done) continue;
        const float* r = lp + row_of(a, j) * v;
        int32_t token = o.eos_id;  // at the maximum length
        if (in_prefix) {
          token = prefixes[s][t];
          MOE_CHECK(token < v, "sampling: prefix token ", token, " of input ", s, " is outside the vocabulary of ", v);
        } else if (t < max_len[s]) {
          token = drawn[a * o.beam + j];
        }
        if (token < 0) {  // nothing may be drawn: the sample ends without a hypothesis
          x.done = true;
          continue;
        }
        const double token_log_prob = r[token] - (in_prefix ? 0.0 : unk_cost(token, o));
        x.log_prob += token_log_prob;
        x.token_scores.push_back(static_cast<float>(token_log_prob));
        if (token == o.eos_id) {
          x.done = true;
          const int64_t len = static_cast<int64_t>(x.tokens.size()) + 1;
          finished[s].push_back(
              {x.tokens, x.log_prob, normalized_score(x.log_prob, len, o.penalty, o.lenpen), {}, x.token_scores});
        } else {
          x.tokens.push_back(token);
        }
      }
      const auto& all = samples[s];
      if (std::all_of(all.begin(), all.end(), [](const Sample& x) { return x.done; })) continue;
      next_active.push_back(s);
      for (int64_t j = 0; j < o.beam; ++j) {
        origin.push_back(static_cast<int32_t>(row_of(a, j)));
        next_prev.push_back(all[j].done ? o.pad_id : all[j].tokens.back());
      }
    }
    active = std::move(next_active);
    prev = std::move(next_prev);
    rows_per = o.beam;
    if (!active.empty())
      reorder(Tensor::from_vector(origin, Shape{static_cast<int64_t>(origin.size())}, logp.device()));
  }

  keep_n_best(finished, o.n_best);
  return finished;
}

std::vector<std::vector<Hypothesis>> run_search(const std::vector<int64_t>& src_lengths,
                                                const std::vector<const std::vector<int32_t>*>& inputs,
                                                const StepFn& step, const ReorderFn& reorder, const BeamOptions& o,
                                                const TargetPrefixes& prefixes) {
  if (!o.sampling) return beam_search(src_lengths, step, reorder, o, prefixes);
  std::vector<uint64_t> streams;
  for (const auto* input : inputs) streams.push_back(sample_stream(*input));
  return sampling_search(src_lengths, streams, step, reorder, o, prefixes);
}

}  // namespace moe
