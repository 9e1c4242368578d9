// expert_report.h implementation. Covered by tests/translator/experts_command_test.cpp.
#include "translator/expert_report.h"

#include <cmath>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "common/json.h"

namespace moe {

namespace {
std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

struct GroupMean {
  int sites = 0;
  double entropy = 0, max_entropy = 0;
};

/// Per group (in site order), the mean over its sites of the average entropy and of ln E.
std::vector<std::pair<std::string, GroupMean>> group_means(const std::vector<SiteSummary>& sites) {
  std::vector<std::pair<std::string, GroupMean>> out;
  for (const SiteSummary& s : sites) {
    if (out.empty() || out.back().first != s.group) out.emplace_back(s.group, GroupMean{});
    GroupMean& g = out.back().second;
    ++g.sites;
    g.entropy += s.entropy;
    g.max_entropy += s.max_entropy;
  }
  for (auto& [name, g] : out) {
    g.entropy /= g.sites;
    g.max_entropy /= g.sites;
  }
  return out;
}

std::string run_line(const ExpertReport& r) {
  std::ostringstream os;
  const ExpertRunInfo& i = r.info;
  if (r.input == "lm")
    os << i.lm_tokens << " tokens in windows of " << r.options.context;
  else
    os << i.sentences << " sentences, " << i.src_tokens << " source and " << i.tgt_tokens << " target tokens ("
       << (r.input == "pairs" ? "teacher forcing on the given targets" : "teacher forcing on its own translations")
       << ")";
  if (i.truncated) os << ", " << i.truncated << " sequences truncated";
  return os.str();
}

/// "e3" (built by appending: GCC 12 warns falsely about "e" + std::to_string(e)).
std::string expert_label(int64_t e) {
  std::string s = "e";
  s += std::to_string(e);
  return s;
}

std::string balance_cells(const std::vector<double>& share, const Balance& b) {
  if (share.empty()) return "";
  return "CV " + fixed(b.cv, 3) + ", max/mean " + fixed(b.max_over_mean, 3);
}
}  // namespace

void write_expert_text(std::ostream& out, const ExpertReport& r) {
  out << "moe-score experts: " << r.model << " (" << r.model_type << "; " << r.site_types << ")\n"
      << run_line(r) << "\nPMI events: " << enum_name(r.options.attribution) << " attribution of "
      << enum_name(r.options.unit) << "s; tokens seen at least " << r.min_count << " times; top " << r.top << "\n";
  for (const auto& [group, g] : group_means(r.sites))
    out << "average gate entropy, " << group << ": " << fixed(g.entropy, 4) << " nats over " << g.sites
        << (g.sites == 1 ? " site" : " sites") << " (mean ln E " << fixed(g.max_entropy, 4) << ")\n";
  for (const SiteSummary& s : r.sites) {
    const bool routed = !s.routed_share.empty();
    out << "\n== " << s.site << " [" << s.group << ", layer " << s.layer << ", " << s.family << " " << s.policy
        << "; one gate per " << (s.per_sentence ? "sentence" : "token") << (routed ? ", top-" : "")
        << (routed ? std::to_string(s.k) : "") << "]\n"
        << "instances " << s.instances << ", entropy " << fixed(s.entropy, 4)
        << " nats (ln E = " << fixed(s.max_entropy, 4) << ")";
    if (s.max_per_token > 0)
      out << "; the sparse gate has at most k = " << s.max_per_token
          << " nonzeros: ln k = " << fixed(std::log(s.max_per_token), 4);
    if (routed) out << ", routed pairs " << s.routed_pairs;
    out << "\n  expert   argmax%  importance%" << (routed ? "   routed%" : "") << "\n";
    for (int64_t e = 0; e < s.experts; ++e) {
      const size_t i = static_cast<size_t>(e);
      out << "  " << std::left << std::setw(6) << expert_label(e) << std::right << std::setw(9)
          << fixed(100 * s.argmax_share[i], 2) << std::setw(13) << fixed(100 * s.importance_share[i], 2);
      if (routed) out << std::setw(10) << fixed(100 * s.routed_share[i], 2);
      out << "\n";
    }
    out << "  balance: argmax " << balance_cells(s.argmax_share, s.argmax_balance) << "; importance "
        << balance_cells(s.importance_share, s.importance_balance);
    if (routed) out << "; routed " << balance_cells(s.routed_share, s.routed_balance);
    out << "\n";
    if (routed && s.unrouted > 0)
      out << "  tokens with no expert: " << fixed(100.0 * s.unrouted / s.routed_tokens, 2) << "% (" << s.unrouted
          << " of " << s.routed_tokens << ")\n";
    if (const CapacityRecord& c = s.capacity; c.factor > 0)
      out << "  capacity factor " << c.factor
          << (c.applied ? " (applied)" : " (training's, measured: inference keeps every token's experts)")
          << ": dropped " << fixed(100.0 * static_cast<double>(c.dropped) / std::max<int64_t>(1, c.pairs), 2) << "% of "
          << c.pairs << " (token, slot) pairs; capacity use "
          << fixed(100.0 * static_cast<double>(c.kept) / std::max<int64_t>(1, c.slots), 2) << "% of the slots\n";
    out << "  top tokens by PMI (pmi n(t,e)/n(t)):\n";
    for (int64_t e = 0; e < s.experts; ++e) {
      out << "  e" << e << ":";
      if (s.top_tokens[static_cast<size_t>(e)].empty()) out << "  -";
      for (const PmiEntry& p : s.top_tokens[static_cast<size_t>(e)])
        out << "  " << p.token << " (" << fixed(p.pmi, 3) << " " << p.joint << "/" << p.count << ")";
      out << "\n";
    }
  }
}

void write_expert_json(std::ostream& out, const ExpertReport& r) {
  for (const SiteSummary& s : r.sites) {
    JsonObject o;
    o.add("type", "site").add("site", s.site).add("group", s.group).add("layer", s.layer).add("kind", s.kind);
    o.add("family", s.family).add("policy", s.policy).add("granularity", s.per_sentence ? "sentence" : "token");
    o.add("experts", s.experts).add("instances", s.instances).add("entropy", s.entropy);
    o.add("max_entropy", s.max_entropy).add("argmax_share", s.argmax_share);
    o.add("argmax_cv", s.argmax_balance.cv).add("argmax_max_over_mean", s.argmax_balance.max_over_mean);
    o.add("importance_share", s.importance_share).add("importance_cv", s.importance_balance.cv);
    o.add("importance_max_over_mean", s.importance_balance.max_over_mean);
    if (s.max_per_token > 0) {
      o.add("max_per_token", s.max_per_token);
      o.add("max_entropy_k", std::log(static_cast<double>(s.max_per_token)));
    }
    if (!s.routed_share.empty() && s.routed_tokens > 0)
      o.add("unrouted_fraction", static_cast<double>(s.unrouted) / static_cast<double>(s.routed_tokens));
    if (const CapacityRecord& c = s.capacity; c.factor > 0) {
      o.add("capacity_factor", c.factor).add("capacity_applied", c.applied);
      o.add("dropped_fraction", static_cast<double>(c.dropped) / static_cast<double>(std::max<int64_t>(1, c.pairs)));
      o.add("capacity_use", static_cast<double>(c.kept) / static_cast<double>(std::max<int64_t>(1, c.slots)));
    }
    if (!s.routed_share.empty()) {
      o.add("k", s.k).add("routed_pairs", s.routed_pairs).add("routed_share", s.routed_share);
      o.add("routed_cv", s.routed_balance.cv).add("routed_max_over_mean", s.routed_balance.max_over_mean);
    }
    o.add("pmi_events", s.pmi_events);
    std::string experts = "[";
    for (size_t e = 0; e < s.top_tokens.size(); ++e) {
      if (e) experts += ',';
      experts += '[';
      for (size_t j = 0; j < s.top_tokens[e].size(); ++j) {
        const PmiEntry& p = s.top_tokens[e][j];
        if (j) experts += ',';
        experts +=
            JsonObject().add("token", p.token).add("pmi", p.pmi).add("joint", p.joint).add("count", p.count).str();
      }
      experts += ']';
    }
    o.add_raw("top_tokens", experts + "]");
    out << o.str() << "\n";
  }
  JsonObject sum;
  sum.add("type", "summary").add("model", r.model).add("model_type", r.model_type).add("site_types", r.site_types);
  sum.add("input", r.input).add("sentences", r.info.sentences).add("src_tokens", r.info.src_tokens);
  sum.add("tgt_tokens", r.info.tgt_tokens).add("lm_tokens", r.info.lm_tokens).add("truncated", r.info.truncated);
  sum.add("attribution", enum_name(r.options.attribution))
      .add("unit", enum_name(r.options.unit))
      .add("min_count", r.min_count);
  sum.add("top", r.top).add("sites", static_cast<int64_t>(r.sites.size()));
  JsonObject groups;
  double all = 0;
  for (const auto& [name, g] : group_means(r.sites)) {
    groups.add_raw(
        name, JsonObject().add("sites", g.sites).add("entropy", g.entropy).add("max_entropy", g.max_entropy).str());
  }
  for (const SiteSummary& s : r.sites) all += s.entropy;
  sum.add("entropy", r.sites.empty() ? 0.0 : all / static_cast<double>(r.sites.size()));
  sum.add_raw("groups", groups.str());
  out << sum.str() << "\n";
}

}  // namespace moe
