// BLEU (sacreBLEU 2.x semantics): n-gram statistics, reference merging by max count, closest
// reference length, smoothing (exp: p_n = 1/(2^k * total_n) for the k-th zero order; floor:
// value/total_n; add-k: (c+k)/(t+k) for n > 1), effective order, early 0 when nothing matches.
// Covered by tests/metrics/bleu_test.cpp.
#include "metrics/bleu.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "common/error.h"
#include "metrics/text.h"
#include "metrics/tokenizer.h"

namespace moe::metrics {
namespace {

using NgramCounts = std::unordered_map<std::string, int64_t>;

// All n-grams of orders 1..max_order of line.split(), keyed by the tokens joined with ' '
// (tokens never contain whitespace, so the key is unambiguous); returns the token count.
int64_t extract_ngrams(std::string_view line, int max_order, NgramCounts& out) {
  std::vector<std::string> tokens = py_split(line);
  const int64_t n_tok = static_cast<int64_t>(tokens.size());
  for (int64_t i = 0; i < n_tok; ++i) {
    std::string key;
    for (int n = 1; n <= max_order && i + n <= n_tok; ++n) {
      if (n > 1) key.push_back(' ');
      key += tokens[i + n - 1];
      ++out[key];
    }
  }
  return n_tok;
}

int order_of(const std::string& key) {
  int n = 1;
  for (char c : key) n += c == ' ';
  return n;
}

double my_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

}  // namespace

void BleuStats::add(const BleuStats& o) {
  if (correct.empty()) {
    correct.assign(o.correct.size(), 0);
    total.assign(o.total.size(), 0);
  }
  MOE_CHECK(correct.size() == o.correct.size(), "bleu: adding statistics of order ", o.correct.size(),
            " to statistics of order ", correct.size());
  sys_len += o.sys_len;
  ref_len += o.ref_len;
  for (std::size_t i = 0; i < correct.size(); ++i) {
    correct[i] += o.correct[i];
    total[i] += o.total[i];
  }
}

BleuScore compute_bleu(const std::vector<int64_t>& correct, const std::vector<int64_t>& total,
                       int64_t sys_len, int64_t ref_len, const std::string& smooth_method,
                       std::optional<double> smooth_value, bool effective_order, int max_ngram_order) {
  MOE_CHECK(smooth_method == "exp" || smooth_method == "floor" || smooth_method == "add-k" ||
                smooth_method == "none",
            "bleu: unknown smoothing method '", smooth_method, "' (known: exp, floor, add-k, none)");
  MOE_CHECK(static_cast<int>(correct.size()) == max_ngram_order &&
                static_cast<int>(total.size()) == max_ngram_order,
            "bleu: statistics of sizes ", correct.size(), "/", total.size(), " for max order ",
            max_ngram_order);
  double value = smooth_value ? *smooth_value
                              : (smooth_method == "floor" ? 0.1 : smooth_method == "add-k" ? 1.0 : 0.0);
  BleuScore s;
  s.counts = correct;
  s.totals = total;
  s.sys_len = sys_len;
  s.ref_len = ref_len;
  s.ratio = ref_len ? static_cast<double>(sys_len) / static_cast<double>(ref_len) : 0.0;
  if (sys_len < ref_len)
    s.bp = sys_len > 0 ? std::exp(1.0 - static_cast<double>(ref_len) / static_cast<double>(sys_len)) : 0.0;
  else
    s.bp = 1.0;
  s.precisions.assign(max_ngram_order, 0.0);
  bool any = false;
  for (int64_t c : correct) any = any || c != 0;
  if (!any) return s;  // sacreBLEU #141: no matches at all -> 0

  double smooth_mteval = 1.0;
  int eff_order = max_ngram_order;
  for (int n = 1; n <= max_ngram_order; ++n) {
    double c = static_cast<double>(correct[n - 1]);
    double t = static_cast<double>(total[n - 1]);
    if (smooth_method == "add-k" && n > 1) {
      c += value;
      t += value;
    }
    if (t == 0) break;
    if (effective_order) eff_order = n;
    if (c == 0) {
      if (smooth_method == "exp") {
        smooth_mteval *= 2;
        s.precisions[n - 1] = 100.0 / (smooth_mteval * t);
      } else if (smooth_method == "floor") {
        s.precisions[n - 1] = 100.0 * value / t;
      }
    } else {
      s.precisions[n - 1] = 100.0 * c / t;
    }
  }
  double sum = 0.0;
  for (int n = 0; n < eff_order; ++n) sum += my_log(s.precisions[n]);
  s.score = s.bp * std::exp(sum / eff_order);
  return s;
}

std::string BleuScore::verbose() const {
  std::string out;
  char buf[64];
  for (std::size_t i = 0; i < precisions.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.1f", i ? "/" : "", precisions[i]);
    out += buf;
  }
  char tail[256];
  std::snprintf(tail, sizeof tail, " (BP = %.3f ratio = %.3f hyp_len = %lld ref_len = %lld)", bp, ratio,
                static_cast<long long>(sys_len), static_cast<long long>(ref_len));
  return out + tail;
}

std::string BleuScore::format(int width) const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "BLEU = %.*f ", width, score);
  return buf + verbose();
}

Bleu::Bleu(BleuOptions options) : options_(std::move(options)) {
  tokenizer_ = make_tokenizer(options_.tokenize);
  MOE_CHECK(options_.max_ngram_order >= 1, "bleu: max n-gram order must be >= 1, got ",
            options_.max_ngram_order);
  compute_bleu(std::vector<int64_t>(options_.max_ngram_order, 0),
               std::vector<int64_t>(options_.max_ngram_order, 0), 0, 0, options_.smooth_method,
               options_.smooth_value, false, options_.max_ngram_order);  // validates the method
}

std::string Bleu::preprocess(std::string_view line) const {
  std::string s = options_.lowercase ? py_lower(line) : std::string(line);
  s = tokenizer_(py_rstrip(s));
  if (options_.compound_split) s = compound_split(s);
  return s;
}

BleuStats Bleu::segment_stats(std::string_view hyp, const std::vector<std::string>& refs) const {
  const int order = options_.max_ngram_order;
  NgramCounts ref_ngrams;
  std::vector<int64_t> ref_lens;
  for (const auto& ref : refs) {
    if (ref.empty()) continue;
    NgramCounts this_ngrams;
    ref_lens.push_back(extract_ngrams(preprocess(ref), order, this_ngrams));
    for (const auto& [k, v] : this_ngrams) {
      int64_t& slot = ref_ngrams[k];
      slot = std::max(slot, v);
    }
  }
  MOE_CHECK(!ref_lens.empty(), "bleu: empty reference sentence found (every reference of a segment is empty)");
  NgramCounts hyp_ngrams;
  BleuStats st;
  st.sys_len = extract_ngrams(preprocess(hyp), order, hyp_ngrams);
  int64_t closest_diff = -1, closest_len = -1;
  for (int64_t len : ref_lens) {
    int64_t diff = std::llabs(st.sys_len - len);
    if (closest_diff == -1 || diff < closest_diff) {
      closest_diff = diff;
      closest_len = len;
    } else if (diff == closest_diff && len < closest_len) {
      closest_len = len;
    }
  }
  st.ref_len = closest_len;
  st.correct.assign(order, 0);
  st.total.assign(order, 0);
  for (const auto& [k, v] : hyp_ngrams) {
    int n = order_of(k) - 1;
    st.total[n] += v;
    auto it = ref_ngrams.find(k);
    if (it != ref_ngrams.end()) st.correct[n] += std::min(v, it->second);
  }
  return st;
}

BleuScore Bleu::score_from_stats(const BleuStats& st) const {
  std::vector<int64_t> correct = st.correct, total = st.total;
  if (correct.empty()) correct.assign(options_.max_ngram_order, 0), total.assign(options_.max_ngram_order, 0);
  return compute_bleu(correct, total, st.sys_len, st.ref_len, options_.smooth_method,
                      options_.smooth_value, options_.effective_order, options_.max_ngram_order);
}

BleuScore Bleu::corpus_score(const std::vector<std::string>& hyps,
                             const std::vector<std::vector<std::string>>& refs) {
  MOE_CHECK(!refs.empty(), "bleu: no reference streams given");
  for (std::size_t k = 0; k < refs.size(); ++k)
    MOE_CHECK(refs[k].size() == hyps.size(), "bleu: reference stream ", k, " has ", refs[k].size(),
              " lines but the hypotheses have ", hyps.size());
  BleuStats total;
  total.correct.assign(options_.max_ngram_order, 0);
  total.total.assign(options_.max_ngram_order, 0);
  std::set<int> counts;
  std::vector<std::string> seg_refs(refs.size());
  for (std::size_t i = 0; i < hyps.size(); ++i) {
    int non_empty = 0;
    for (std::size_t k = 0; k < refs.size(); ++k) {
      seg_refs[k] = refs[k][i];
      non_empty += !seg_refs[k].empty();
    }
    MOE_CHECK(non_empty > 0, "bleu: empty reference sentence found at line ", i + 1);
    counts.insert(non_empty);
    total.add(segment_stats(hyps[i], seg_refs));
  }
  nrefs_ = counts.size() <= 1 ? static_cast<int>(refs.size()) : -1;
  if (counts.size() == 1) nrefs_ = *counts.begin();
  return score_from_stats(total);
}

BleuScore Bleu::sentence_score(std::string_view hyp, const std::vector<std::string>& refs) {
  std::vector<std::vector<std::string>> streams;
  for (const auto& r : refs) streams.push_back({r});
  return corpus_score({std::string(hyp)}, streams);
}

std::string Bleu::signature() const {
  std::string smooth = options_.smooth_method;
  if (smooth == "floor" || smooth == "add-k") {
    double v = options_.smooth_value ? *options_.smooth_value : (smooth == "floor" ? 0.1 : 1.0);
    char buf[64];
    std::snprintf(buf, sizeof buf, "[%.2f]", v);
    smooth += buf;
  }
  std::string sig = "nrefs:" + (nrefs_ < 0 ? std::string("var") : std::to_string(nrefs_));
  sig += std::string("|case:") + (options_.lowercase ? "lc" : "mixed");
  sig += std::string("|eff:") + (options_.effective_order ? "yes" : "no");
  sig += "|tok:" + options_.tokenize;
  if (options_.compound_split) sig += "+compound";
  sig += "|smooth:" + smooth;
  sig += std::string("|version:") + k_sacrebleu_version;
  return sig;
}

}  // namespace moe::metrics
