// chrF / chrF++ (sacreBLEU 2.x): n-gram extraction over code points, match statistics with
// "no hits when the reference has no n-grams of that order", F_beta with effective-order averaging
// or eps smoothing. Covered by tests/metrics/chrf_test.cpp.
#include "metrics/chrf.h"

#include <cstdio>
#include <set>
#include <unordered_map>

#include "common/error.h"
#include "metrics/bleu.h"
#include "metrics/text.h"

namespace moe::metrics {
namespace {

using Counts = std::unordered_map<std::u32string, int64_t>;

// Orders 1..char_order of characters, then 1..word_order of words (words joined by ' ').
std::vector<Counts> extract(std::string_view line, const ChrfOptions& o) {
  std::vector<Counts> out(o.char_order + o.word_order);
  std::u32string chars = utf8_decode(line);
  if (!o.whitespace) {
    std::u32string packed;
    for (const auto& w : py_split(std::u32string_view(chars))) packed += w;
    chars.swap(packed);
  }
  const std::size_t len = chars.size();
  for (int n = 1; n <= o.char_order; ++n)
    for (std::size_t i = 0; i + n <= len; ++i) ++out[n - 1][chars.substr(i, n)];
  if (o.word_order > 0) {
    std::vector<std::u32string> words;
    for (const auto& w : chrf_words(line)) words.push_back(utf8_decode(w));
    for (int n = 1; n <= o.word_order; ++n) {
      for (std::size_t i = 0; i + n <= words.size(); ++i) {
        std::u32string key = words[i];
        for (int k = 1; k < n; ++k) key += U' ' + words[i + k];
        ++out[o.char_order + n - 1][key];
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> chrf_words(std::string_view line) {
  static const std::string puncts = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  auto is_punct = [](char c) { return puncts.find(c) != std::string::npos; };
  std::vector<std::string> out;
  for (auto& w : py_split(line)) {
    if (utf8_decode(w).size() == 1) {
      out.push_back(w);
    } else if (is_punct(w.back())) {
      out.push_back(w.substr(0, w.size() - 1));
      out.push_back(w.substr(w.size() - 1));
    } else if (is_punct(w.front())) {
      out.push_back(w.substr(0, 1));
      out.push_back(w.substr(1));
    } else {
      out.push_back(w);
    }
  }
  return out;
}

Chrf::Chrf(ChrfOptions options) : options_(options) {
  MOE_CHECK(options_.char_order >= 0 && options_.word_order >= 0 &&
                options_.char_order + options_.word_order > 0,
            "chrf: orders must be >= 0 and not both 0 (char_order ", options_.char_order,
            ", word_order ", options_.word_order, ")");
}

double Chrf::f_score(const std::vector<int64_t>& stats) const {
  const int order = options_.char_order + options_.word_order;
  MOE_CHECK(static_cast<int>(stats.size()) == 3 * order, "chrf: ", stats.size(),
            " statistics for order ", order, " (want ", 3 * order, ")");
  const double eps = 1e-16;
  const double factor = static_cast<double>(options_.beta) * options_.beta;
  double score = 0.0, avg_prec = 0.0, avg_rec = 0.0;
  int effective_order = 0;
  for (int i = 0; i < order; ++i) {
    int64_t n_hyp = stats[3 * i], n_ref = stats[3 * i + 1], n_match = stats[3 * i + 2];
    double prec = n_hyp > 0 ? static_cast<double>(n_match) / n_hyp : eps;
    double rec = n_ref > 0 ? static_cast<double>(n_match) / n_ref : eps;
    double denom = factor * prec + rec;
    score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
    if (n_hyp > 0 && n_ref > 0) {
      avg_prec += prec;
      avg_rec += rec;
      ++effective_order;
    }
  }
  if (options_.eps_smoothing) return 100 * score / order;
  if (effective_order == 0) {
    avg_prec = avg_rec = 0.0;
  } else {
    avg_prec /= effective_order;
    avg_rec /= effective_order;
  }
  if (avg_prec + avg_rec == 0.0) return 0.0;
  return 100 * (1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec);
}

std::vector<int64_t> Chrf::segment_stats(std::string_view hyp_raw,
                                         const std::vector<std::string>& refs) const {
  std::string hyp = options_.lowercase ? py_lower(hyp_raw) : std::string(hyp_raw);
  std::vector<Counts> hyp_ngrams = extract(hyp, options_);
  std::vector<int64_t> best;
  double best_f = -1.0;
  for (const auto& ref_raw : refs) {
    if (ref_raw.empty()) continue;
    std::string ref = options_.lowercase ? py_lower(ref_raw) : ref_raw;
    std::vector<Counts> ref_ngrams = extract(ref, options_);
    std::vector<int64_t> stats;
    for (std::size_t o = 0; o < hyp_ngrams.size(); ++o) {
      int64_t match = 0, hyp_count = 0, ref_count = 0;
      for (const auto& [ng, c] : hyp_ngrams[o]) {
        hyp_count += c;
        auto it = ref_ngrams[o].find(ng);
        if (it != ref_ngrams[o].end()) match += std::min(c, it->second);
      }
      for (const auto& kv : ref_ngrams[o]) ref_count += kv.second;
      stats.push_back(ref_ngrams[o].empty() ? 0 : hyp_count);
      stats.push_back(ref_count);
      stats.push_back(match);
    }
    double f = f_score(stats);
    if (f > best_f) {
      best_f = f;
      best = std::move(stats);
    }
  }
  MOE_CHECK(best_f >= 0.0, "chrf: empty reference sentence found (every reference of a segment is empty)");
  return best;
}

ChrfScore Chrf::corpus_score(const std::vector<std::string>& hyps,
                             const std::vector<std::vector<std::string>>& refs) {
  MOE_CHECK(!refs.empty(), "chrf: no reference streams given");
  for (std::size_t k = 0; k < refs.size(); ++k)
    MOE_CHECK(refs[k].size() == hyps.size(), "chrf: reference stream ", k, " has ", refs[k].size(),
              " lines but the hypotheses have ", hyps.size());
  const int order = options_.char_order + options_.word_order;
  std::vector<int64_t> total(3 * order, 0);
  std::set<int> counts;
  std::vector<std::string> seg_refs(refs.size());
  for (std::size_t i = 0; i < hyps.size(); ++i) {
    int non_empty = 0;
    for (std::size_t k = 0; k < refs.size(); ++k) {
      seg_refs[k] = refs[k][i];
      non_empty += !seg_refs[k].empty();
    }
    MOE_CHECK(non_empty > 0, "chrf: empty reference sentence found at line ", i + 1);
    counts.insert(non_empty);
    auto st = segment_stats(hyps[i], seg_refs);
    for (std::size_t j = 0; j < st.size(); ++j) total[j] += st[j];
  }
  nrefs_ = counts.size() == 1 ? *counts.begin() : counts.empty() ? static_cast<int>(refs.size()) : -1;
  ChrfScore s;
  s.score = f_score(total);
  s.name = "chrF" + std::to_string(options_.beta) + std::string(options_.word_order, '+');
  s.stats = std::move(total);
  return s;
}

ChrfScore Chrf::sentence_score(std::string_view hyp, const std::vector<std::string>& refs) {
  std::vector<std::vector<std::string>> streams;
  for (const auto& r : refs) streams.push_back({r});
  return corpus_score({std::string(hyp)}, streams);
}

std::string ChrfScore::format(int width) const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s = %.*f", name.c_str(), width, score);
  return buf;
}

std::string Chrf::signature() const {
  std::string sig = "nrefs:" + (nrefs_ < 0 ? std::string("var") : std::to_string(nrefs_));
  sig += std::string("|case:") + (options_.lowercase ? "lc" : "mixed");
  sig += std::string("|eff:") + (options_.eps_smoothing ? "no" : "yes");
  sig += "|nc:" + std::to_string(options_.char_order);
  sig += "|nw:" + std::to_string(options_.word_order);
  sig += std::string("|space:") + (options_.whitespace ? "yes" : "no");
  sig += std::string("|version:") + k_sacrebleu_version;
  return sig;
}

}  // namespace moe::metrics
