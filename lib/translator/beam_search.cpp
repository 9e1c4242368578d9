// beam_search.h implementation: the device does the [N, V] work (beam_topk); the host keeps
// the hypotheses (tokens, scores) and reads back only the top 2*beam candidates of each sentence.
// Covered by tests/translator/beam_search_test.cpp.
#include "translator/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "ops/beam_topk.h"
#include "translator/repeated_ngrams.h"
#include "translator/target_prefix.h"
#include "translator/unk_penalty.h"

namespace moe {

double normalized_score(double log_prob, int64_t length, LengthPenalty kind, double lenpen) {
  const double len = static_cast<double>(length);
  if (kind == LengthPenalty::gnmt) return log_prob / std::pow((5.0 + len) / 6.0, lenpen);
  return log_prob / std::pow(len, lenpen);
}

int64_t max_output_length(int64_t src_len, const BeamOptions& o) {
  const double by_source = o.max_len_a * static_cast<double>(src_len) + static_cast<double>(o.max_len_b);
  const int64_t n = static_cast<int64_t>(std::floor(std::max(0.0, by_source)));
  return std::min(n, o.max_positions - 1);
}

std::vector<int64_t> max_output_lengths(const std::vector<int64_t>& src_lengths, const BeamOptions& o,
                                        const TargetPrefixes& prefixes) {
  std::vector<int64_t> max_len;
  for (int64_t len : src_lengths) max_len.push_back(max_output_length(len, o));
  check_prefixes(prefixes, static_cast<int64_t>(src_lengths.size()), o, max_len);
  return max_len;
}

void keep_n_best(std::vector<std::vector<Hypothesis>>& lists, int n_best) {
  for (auto& list : lists) {
    std::stable_sort(list.begin(), list.end(),
                     [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
    if (static_cast<int>(list.size()) > n_best) list.resize(static_cast<size_t>(n_best));
  }
}

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Row {
  int64_t sentence;
  std::vector<int32_t> tokens;
  double score;                     // summed log-probs (-inf for a filler row)
  std::vector<float> token_scores;  // each token's log-prob: the step's candidate score less the row's
};

void check_options(const BeamOptions& o) {
  MOE_CHECK(o.beam >= 1, "beam search: beam must be at least 1, got ", o.beam);
  MOE_CHECK(o.n_best >= 1 && o.n_best <= o.beam, "beam search: n-best ", o.n_best, " must be in [1, beam = ", o.beam,
            "]");
  MOE_CHECK(o.max_positions >= 1, "beam search: max_positions must be positive, got ", o.max_positions);
  MOE_CHECK(o.min_len >= 0, "beam search: min length must be >= 0, got ", o.min_len);
}
}  // namespace

std::vector<std::vector<Hypothesis>> beam_search(const std::vector<int64_t>& src_lengths, const StepFn& step,
                                                 const ReorderFn& reorder, const BeamOptions& o,
                                                 const TargetPrefixes& prefixes) {
  check_options(o);
  const int64_t sentences = static_cast<int64_t>(src_lengths.size());
  std::vector<std::vector<Hypothesis>> finished(static_cast<size_t>(sentences));
  if (sentences == 0) return finished;
  const std::vector<int64_t> max_len = max_output_lengths(src_lengths, o, prefixes);

  std::vector<Row> rows;  // active rows, sentence-major: `beams` rows per active sentence
  for (int64_t s = 0; s < sentences; ++s) rows.push_back({s, {}, 0.0, {}});
  int64_t beams = 1;  // rows per active sentence: 1 before the first step, then `beam`
  std::vector<int32_t> prev(rows.size(), o.bos_id);
  const BeamSpecials ids{o.pad_id, o.bos_id, o.eos_id};

  for (int64_t t = 0; !rows.empty(); ++t) {
    const int64_t n = static_cast<int64_t>(rows.size()), active = n / beams;
    Tensor logp = step(Tensor::from_vector(prev, Shape{n}));
    MOE_CHECK(logp.defined() && logp.shape().ndim() == 2 && logp.shape()[0] == n,
              "beam search: the step function returned ", logp.shape(), " for ", n, " rows (expected [", n, ",V])");
    const int64_t v = logp.shape()[1];
    MOE_CHECK(beams * v < std::numeric_limits<int32_t>::max(), "beam search: ", beams, " beams x ", v,
              " tokens exceed the top-k index range");
    std::vector<uint8_t> free_rows(static_cast<size_t>(n));  // past their forced prefix: the options apply
    for (int64_t r = 0; r < n; ++r) free_rows[r] = !forced_at(prefixes, rows[r].sentence, t);
    if (o.no_repeat_ngram_size > 0) {
      std::vector<const std::vector<int32_t>*> tokens(static_cast<size_t>(n), nullptr);
      for (int64_t r = 0; r < n; ++r)
        if (free_rows[r]) tokens[r] = &rows[r].tokens;
      block_repeated_ngrams(logp, tokens, o.no_repeat_ngram_size);
    }
    penalize_unk(logp, free_rows, o);
    const Device dev = logp.device();
    std::vector<float> cum(static_cast<size_t>(n));
    std::vector<uint8_t> mode(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      cum[r] = static_cast<float>(rows[r].score);
      const int64_t limit = max_len[rows[r].sentence];
      mode[r] = static_cast<uint8_t>(t >= limit      ? BeamRowMode::eos_only
                                     : t < o.min_len ? BeamRowMode::no_eos
                                                     : BeamRowMode::normal);
    }
    const int64_t k = std::min<int64_t>(2 * o.beam, beams * v);
    Tensor top_v = Tensor::empty(Shape{active, k}, DType::f32, dev);
    Tensor top_i = Tensor::empty(Shape{active, k}, DType::i32, dev);
    beam_topk(logp, Tensor::from_vector(cum, Shape{n}, dev), Tensor::from_vector(mode, Shape{n}, dev), ids, beams,
              top_v, top_i);
    std::vector<float> cand_score = top_v.to_vector<float>();
    std::vector<int32_t> cand_index = top_i.to_vector<int32_t>();
    if (!prefixes.empty()) {
      std::vector<int64_t> sentence_of(static_cast<size_t>(active));
      for (int64_t a = 0; a < active; ++a) sentence_of[a] = rows[a * beams].sentence;
      force_prefix_candidates(prefixes, t, sentence_of, beams, logp, cum, k, cand_score, cand_index);
    }

    std::vector<Row> next;
    std::vector<int32_t> origin, next_prev;
    for (int64_t a = 0; a < active; ++a) {
      const int64_t s = rows[a * beams].sentence;
      auto& done = finished[s];
      std::vector<int64_t> keep;  // candidate positions continuing the search
      for (int64_t c = 0; c < k; ++c) {
        const float sc = cand_score[a * k + c];
        if (std::isnan(sc)) MOE_FAIL("beam search: NaN score at step ", t, " of sentence ", s);
        if (sc == -std::numeric_limits<float>::infinity()) break;  // sorted: the rest is -inf too
        const int32_t idx = cand_index[a * k + c];
        const Row& from = rows[a * beams + idx / v];
        if (idx % v == o.eos_id) {
          if (c < o.beam && static_cast<int>(done.size()) < o.beam) {
            const int64_t len = static_cast<int64_t>(from.tokens.size()) + 1;
            done.push_back({from.tokens, sc, normalized_score(sc, len, o.penalty, o.lenpen), {}, from.token_scores});
            done.back().token_scores.push_back(static_cast<float>(sc - from.score));
          }
        } else if (static_cast<int>(keep.size()) < o.beam) {
          keep.push_back(c);
        }
      }
      if (static_cast<int>(done.size()) >= o.beam || t >= max_len[s] || keep.empty()) continue;
      for (int64_t j = 0; j < o.beam; ++j) {
        if (j < static_cast<int64_t>(keep.size())) {
          const int64_t c = keep[j];
          const int32_t idx = cand_index[a * k + c];
          const int64_t row = a * beams + idx / v;
          Row r{s, rows[row].tokens, cand_score[a * k + c], rows[row].token_scores};
          r.tokens.push_back(idx % v);
          r.token_scores.push_back(static_cast<float>(r.score - rows[row].score));
          origin.push_back(static_cast<int32_t>(row));
          next_prev.push_back(idx % v);
          next.push_back(std::move(r));
        } else {  // fewer than `beam` finite candidates: a filler row that can never be chosen
          origin.push_back(static_cast<int32_t>(a * beams));
          next_prev.push_back(o.pad_id);
          next.push_back({s, {}, kNegInf, {}});
        }
      }
    }
    rows = std::move(next);
    prev = std::move(next_prev);
    beams = o.beam;
    if (rows.empty()) break;
    reorder(Tensor::from_vector(origin, Shape{static_cast<int64_t>(origin.size())}, dev));
  }

  keep_n_best(finished, o.n_best);
  return finished;
}

}  // namespace moe
