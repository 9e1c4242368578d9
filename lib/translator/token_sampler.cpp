// token_sampler.h implementation: the weights in one vectorised pass; top-k and top-p each find the last token
// they keep, in decreasing weight, by a radix selection: the weights' float bits order them, so a histogram of
// their top 12 bits (1,024 buckets of an eighth of an octave) finds the bucket where the running count or mass
// reaches its target, and only that bucket's tokens are sorted; the tokens after the cut get weight 0. The draw
// walks the kept tokens in id order. Covered by tests/translator/sampling_search_test.cpp.
#include "translator/token_sampler.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"

namespace moe {
namespace {
constexpr int kBucketShift = 20;  // weights are in (0, 1]: their bits >> 20 are below 1,024

int bucket(float w) { return static_cast<int>(std::bit_cast<uint32_t>(w) >> kBucketShift); }

/// w[i] = e^((x[i] - m) / T), 0 where x[i] is -inf (computed for every entry, then selected: the loop vectorises).
void weights(const float* __restrict x, int64_t v, float m, float inv_t, float* __restrict w) {
  for (int64_t i = 0; i < v; ++i) {
    const float e = cpu::exp_fast((x[i] - m) * inv_t);
    w[i] = x[i] == -std::numeric_limits<float>::infinity() ? 0.f : e;
  }
}

/// w[i] = 0 for the tokens after (last_weight, last_id) in decreasing weight, ties by lower id.
void drop_lighter(float* __restrict w, int64_t v, float last_weight, int64_t last_id) {
  for (int64_t i = 0; i < v; ++i) {
    const bool keep = w[i] > last_weight || (w[i] == last_weight && i <= last_id);
    w[i] = keep ? w[i] : 0.f;
  }
}

/// Keeps the tokens of w (weight > 0) up to the first, in decreasing weight (ties by lower id), at which the
/// running count (by_mass false) or weight (true) reaches `want`, and sets the others' weights to 0.
void keep_head(float* w, int64_t v, bool by_mass, double want, SamplerScratch& s) {
  s.histogram.assign(size_t{1} << (32 - kBucketShift - 1), 0.0);
  for (int64_t i = 0; i < v; ++i)
    if (w[i] > 0.f) s.histogram[bucket(w[i])] += by_mass ? w[i] : 1.0;
  int cut = static_cast<int>(s.histogram.size()) - 1;  // the bucket where the running measure reaches want
  for (; cut > 0 && want > s.histogram[cut]; --cut) want -= s.histogram[cut];
  s.work.clear();
  for (int64_t i = 0; i < v; ++i)
    if (w[i] > 0.f && bucket(w[i]) == cut) s.work.emplace_back(w[i], static_cast<int32_t>(i));
  if (s.work.empty()) return;  // the measure never reached want (rounding, or fewer than k tokens): keep all
  std::sort(s.work.begin(), s.work.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  size_t last = 0;
  for (; last + 1 < s.work.size(); ++last) {
    want -= by_mass ? s.work[last].first : 1.0;
    if (want <= 0) break;
  }
  const float weight = s.work[last].first;  // (not a structured binding: clang cannot capture one)
  const int32_t id = s.work[last].second;
  run_wide([&] { drop_lighter(w, v, weight, id); });
}
}  // namespace

int32_t sample_token(const float* logp, int64_t v, const SamplingRule& rule, double u, SamplerScratch& s) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < v; ++i) mx = std::max(mx, logp[i]);
  if (mx == -std::numeric_limits<float>::infinity()) return -1;
  s.weight.resize(static_cast<size_t>(v));
  float* w = s.weight.data();
  // 1 / T within float range: past it (T < 3e-39) (x - m) / T would be 0 * inf = NaN for the most probable token.
  const auto inv_t = static_cast<float>(std::min(1.0 / rule.temperature, double{std::numeric_limits<float>::max()}));
  run_wide([&] { weights(logp, v, mx, inv_t, w); });
  if (rule.topk > 0) keep_head(w, v, false, static_cast<double>(rule.topk), s);
  double total = 0;
  for (int64_t i = 0; i < v; ++i) total += w[i];
  if (rule.topp < 1.0) {
    keep_head(w, v, true, rule.topp * total, s);
    total = 0;
    for (int64_t i = 0; i < v; ++i) total += w[i];
  }
  const double target = u * total;
  double cum = 0;
  int32_t token = -1;
  for (int64_t i = 0; i < v; ++i) {
    if (w[i] == 0.f) continue;
    token = static_cast<int32_t>(i);
    cum += w[i];
    if (cum > target) break;
  }
  return token;  // the last kept one when u * total rounds up to the total
}

}  // namespace moe
