// expert_stats.h implementation. Covered by tests/translator/expert_stats_test.cpp.
#include "translator/expert_stats.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "common/error.h"

namespace moe {

double gate_entropy(std::span<const float> p) {
  double h = 0;
  for (float v : p)
    if (v > 0) h -= static_cast<double>(v) * std::log(static_cast<double>(v));
  return h;
}

int argmax_expert(std::span<const float> p) {
  int best = 0;
  for (size_t e = 1; e < p.size(); ++e)
    if (p[e] > p[static_cast<size_t>(best)]) best = static_cast<int>(e);
  return best;
}

std::vector<double> shares_of(const std::vector<double>& counts) {
  double total = 0;
  for (double c : counts) total += c;
  std::vector<double> s(counts.size(), 0.0);
  if (total > 0)
    for (size_t e = 0; e < counts.size(); ++e) s[e] = counts[e] / total;
  return s;
}

Balance load_balance(const std::vector<double>& x) {
  Balance b;
  if (x.empty()) return b;
  double mean = 0, mx = x[0];
  for (double v : x) {
    mean += v;
    mx = std::max(mx, v);
  }
  mean /= static_cast<double>(x.size());
  if (mean <= 0) return b;
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  b.cv = std::sqrt(var) / mean;
  b.max_over_mean = mx / mean;
  return b;
}

std::vector<std::vector<PmiEntry>> top_pmi(const PmiTable& table, int64_t experts, int64_t min_count, int top) {
  std::vector<int64_t> per_expert(static_cast<size_t>(experts), 0);
  int64_t total = 0;
  for (const auto& [token, counts] : table) {
    MOE_CHECK(static_cast<int64_t>(counts.size()) == experts, "top_pmi: token '", token, "' has ", counts.size(),
              " expert counts, not ", experts);
    for (int64_t e = 0; e < experts; ++e) {
      per_expert[static_cast<size_t>(e)] += counts[static_cast<size_t>(e)];
      total += counts[static_cast<size_t>(e)];
    }
  }
  std::vector<std::vector<PmiEntry>> out(static_cast<size_t>(experts));
  for (const auto& [token, counts] : table) {
    int64_t n_t = 0;
    for (int64_t c : counts) n_t += c;
    if (n_t < min_count || n_t == 0) continue;
    for (int64_t e = 0; e < experts; ++e) {
      const int64_t joint = counts[static_cast<size_t>(e)];
      if (joint == 0) continue;
      const double pmi = std::log(static_cast<double>(joint) * static_cast<double>(total) /
                                  (static_cast<double>(n_t) * static_cast<double>(per_expert[static_cast<size_t>(e)])));
      out[static_cast<size_t>(e)].push_back({token, pmi, joint, n_t});
    }
  }
  for (auto& list : out) {
    std::sort(list.begin(), list.end(), [](const PmiEntry& a, const PmiEntry& b) {
      if (a.pmi != b.pmi) return a.pmi > b.pmi;
      if (a.joint != b.joint) return a.joint > b.joint;
      return a.token < b.token;
    });
    if (static_cast<int>(list.size()) > top) list.resize(static_cast<size_t>(std::max(top, 0)));
  }
  return out;
}

SiteStats::SiteStats(std::string site, std::string family, std::string policy, std::string group, int64_t experts,
                     bool per_sentence)
    : argmax_(static_cast<size_t>(experts), 0.0),
      importance_(static_cast<size_t>(experts), 0.0),
      routed_(static_cast<size_t>(experts), 0.0) {
  MOE_CHECK(experts >= 1, "site ", site, ": ", experts, " experts");
  s_.site = std::move(site);
  s_.family = std::move(family);
  s_.policy = std::move(policy);
  s_.group = std::move(group);
  s_.experts = experts;
  s_.per_sentence = per_sentence;
  std::tie(s_.layer, s_.kind) = site_layer_kind(s_.site);
}

int SiteStats::add_gate(std::span<const float> g) {
  MOE_CHECK(static_cast<int64_t>(g.size()) == experts(), "site ", s_.site, ": a gate over ", g.size(), " experts, not ",
            experts());
  ++s_.instances;
  entropy_sum_ += gate_entropy(g);
  for (size_t e = 0; e < g.size(); ++e) importance_[e] += g[e];
  const int a = argmax_expert(g);
  argmax_[static_cast<size_t>(a)] += 1;
  return a;
}

void SiteStats::add_routed(std::span<const int32_t> experts_, std::span<const float> gates) {
  MOE_CHECK(experts_.size() == gates.size(), "site ", s_.site, ": ", experts_.size(), " routed experts but ",
            gates.size(), " gates");
  max_slots_ = std::max(max_slots_, static_cast<int>(experts_.size()));
  int pairs = 0;
  for (size_t j = 0; j < experts_.size(); ++j) {
    if (experts_[j] < 0 || gates[j] <= 0) continue;
    MOE_CHECK(experts_[j] < experts(), "site ", s_.site, ": routed expert ", experts_[j], " of ", experts());
    routed_[static_cast<size_t>(experts_[j])] += 1;
    ++s_.routed_pairs;
    ++pairs;
  }
  ++s_.routed_tokens;
  if (pairs == 0) ++s_.unrouted;
}

void SiteStats::add_record_info(const GateRecord& r) {
  s_.max_per_token = std::max(s_.max_per_token, r.max_per_token);
  const CapacityRecord& c = r.capacity;
  if (c.factor <= 0) return;
  CapacityRecord& t = s_.capacity;
  t.factor = c.factor;
  t.applied = c.applied;
  t.capacity = c.capacity;  // the last call's
  t.pairs += c.pairs;
  t.dropped += c.dropped;
  t.kept += c.kept;
  t.slots += c.slots;
}

void SiteStats::add_event(const std::string& token, int expert, int64_t n) {
  auto it = pmi_.find(token);
  if (it == pmi_.end()) it = pmi_.emplace(token, std::vector<int64_t>(static_cast<size_t>(experts()), 0)).first;
  it->second[static_cast<size_t>(expert)] += n;
  s_.pmi_events += n;
}

SiteSummary SiteStats::summary(int64_t min_count, int top) const {
  SiteSummary s = s_;
  const double n = static_cast<double>(std::max<int64_t>(s.instances, 1));
  s.entropy = entropy_sum_ / n;
  s.max_entropy = std::log(static_cast<double>(s.experts));
  s.argmax_share = shares_of(argmax_);
  s.importance_share = importance_;
  for (double& v : s.importance_share) v /= n;
  s.argmax_balance = load_balance(s.argmax_share);
  s.importance_balance = load_balance(s.importance_share);
  s.k = max_slots_;
  if (max_slots_ > 0) {
    s.routed_share = shares_of(routed_);
    s.routed_balance = load_balance(s.routed_share);
  }
  s.top_tokens = top_pmi(pmi_, s.experts, min_count, top);
  return s;
}

std::pair<int, std::string> site_layer_kind(const std::string& site) {
  static const std::regex layer("^(l|moe|lstm)([0-9]+)$");
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = site.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(site.substr(start, dot - start));
  parts.push_back(site.substr(start));
  for (size_t i = 0; i < parts.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(parts[i], m, layer)) continue;
    std::string kind;
    for (size_t j = i + 1; j < parts.size(); ++j) kind += (kind.empty() ? "" : ".") + parts[j];
    return {std::stoi(m[2]), kind.empty() ? m[1].str() : kind};
  }
  return {-1, parts.back()};
}

}  // namespace moe
