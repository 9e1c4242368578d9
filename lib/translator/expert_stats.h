// Expert-usage statistics of one gated site (moe-score experts; docs/MODELS.md §0 "Analysis": MAE §5.1,
// Tables 5, 6, 8 and Appendix C; MoA Table 4). E experts; an *instance* is a sentence for per-sentence
// gates (MAE full_mean / uniform sites) and a real (non-padding) token for per-token gates (MAE
// per-position policies, MoA routers, MoE FFN gates). With g the instance's gate distribution:
//   entropy          H(g) = -sum_e g_e ln g_e (nats; 0 ln 0 = 0), averaged over instances; reference
//                    ln E (MAE reports 1.91 MAE-7, 2.02 NOBCD, 2.08 = ln 8 UNI-MAE-7, averaged over layers)
//   argmax share     s_e = #{instances with argmax g = e} / #instances (ties: the lowest e; MAE Table 8)
//   importance share m_e = sum over instances of g_e / #instances (the mean gate probability)
//   routed share     r_e = #{routed (token, slot) pairs on e} / #routed pairs (top-k routers; pairs with
//                    gate 0, e.g. batchwise gates under their thresholds, are not routed)
//   unrouted         the share of a router's tokens with no routed pair (expert choice, batchwise: no expert
//                    took them; a token capacity's drops are counted apart)
//   capacity         a token capacity C per expert (MoE routers where tokens pick experts, capacity_factor):
//                    dropped = sum_e max(0, n_e - C) / sum_e n_e of the routed (token, slot) pairs, and
//                    capacity use = sum_e min(n_e, C) / (E C), summed over the recorded calls (applied at
//                    inference with eval_capacity_factor, else measured at training's factor)
//   load balance of a share vector x (mean 1/E): CV = sqrt(mean_e (x_e - mean)^2) / mean (population
//                    standard deviation, as the MoE paper's CV), and max/mean = max_e x_e / mean
//   PMI(t, e)        = ln( n(t,e) N / (n(t) n(e)) ) over a table of (token, expert) events with
//                    n(t) = sum_e n(t,e), n(e) = sum_t n(t,e), N = sum n (Church & Hanks; MAE Table 6).
//                    Per expert, the tokens with n(t) >= min_count and n(t,e) > 0, highest PMI first
//                    (ties: larger n(t,e), then the token text). How events are attributed (argmax or
//                    routed, pieces or words) is the caller's choice (translator/expert_analysis.h).
// Covered by tests/translator/expert_stats_test.cpp (hand-computed values).
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "layers/gate_recorder.h"

namespace moe {

/// -sum p ln p in nats (0 ln 0 = 0).
double gate_entropy(std::span<const float> p);
/// The index of the largest value (the first of equal ones).
int argmax_expert(std::span<const float> p);
/// counts / their sum (all 0 when the sum is 0).
std::vector<double> shares_of(const std::vector<double>& counts);

struct Balance {
  double cv = 0, max_over_mean = 0;  // 0 for an all-zero vector
};
Balance load_balance(const std::vector<double>& shares);

struct PmiEntry {
  std::string token;
  double pmi = 0;
  int64_t joint = 0, count = 0;  // n(t, e) and n(t)
};
/// Token -> events per expert ([E] counts).
using PmiTable = std::map<std::string, std::vector<int64_t>>;
/// The `top` tokens of highest PMI for each of the E experts (see the file comment).
std::vector<std::vector<PmiEntry>> top_pmi(const PmiTable& table, int64_t experts, int64_t min_count, int top);

/// What one site's statistics come to (SiteStats::summary).
struct SiteSummary {
  std::string site, family, policy, group, kind;  // group: encoder | decoder | lm; kind: e.g. self_attn
  int layer = -1;                                 // from the site name (l<N>, moe<N>); -1 if none
  bool per_sentence = false;
  int64_t experts = 0, instances = 0, routed_pairs = 0, pmi_events = 0;
  int k = 0;                                                         // slots per token of a top-k router (0: no router)
  int max_per_token = 0;                    // a token's gate has at most this many nonzeros (the record's; 0: no bound)
  int64_t routed_tokens = 0, unrouted = 0;  // a router's token instances, and those with no routed pair
  CapacityRecord capacity;                  // summed over the calls (factor 0: none)
  double entropy = 0, max_entropy = 0;                               // mean H(g); ln E
  std::vector<double> argmax_share, importance_share, routed_share;  // routed: empty without a router
  Balance argmax_balance, importance_balance, routed_balance;
  std::vector<std::vector<PmiEntry>> top_tokens;  // per expert
};

/// Accumulates one site over all batches.
class SiteStats {
 public:
  SiteStats(std::string site, std::string family, std::string policy, std::string group, int64_t experts,
            bool per_sentence);
  /// One instance's gate distribution (E values); returns its argmax expert.
  int add_gate(std::span<const float> g);
  /// One token's routed slots: experts (-1 = empty) and gates; slots with gate <= 0 are not routed.
  void add_routed(std::span<const int32_t> experts, std::span<const float> gates);
  /// A record's bound on nonzero gates and its token capacity (GateRecord::max_per_token, capacity).
  void add_record_info(const GateRecord& r);
  /// One (token, expert) event for the PMI table.
  void add_event(const std::string& token, int expert, int64_t n = 1);
  SiteSummary summary(int64_t min_count, int top) const;
  int64_t experts() const { return static_cast<int64_t>(argmax_.size()); }
  bool per_sentence() const { return s_.per_sentence; }
  const std::string& site() const { return s_.site; }

 private:
  SiteSummary s_;  // identity fields
  double entropy_sum_ = 0;
  std::vector<double> argmax_, importance_, routed_;
  int max_slots_ = 0;
  PmiTable pmi_;
};

/// The layer number and the kind of a site name: "encoder.l3.self_attn" -> (3, "self_attn"),
/// "moe1" -> (1, "moe"), "decoder.l0.ffn" -> (0, "ffn").
std::pair<int, std::string> site_layer_kind(const std::string& site);

}  // namespace moe
