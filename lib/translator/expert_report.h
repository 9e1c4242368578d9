// The output of moe-score experts: a readable text report (a table per site: argmax, importance and
// routed shares per expert with their CV and max/mean, then each expert's top tokens by PMI), or JSON
// Lines (--format json): one object per site ("type": "site"), then one summary object ("type":
// "summary": the run, and per group the mean over its sites of the average gate entropy next to the
// mean ln E, as MAE §5.1 averages over layers). Expert indices are 0-based; numbers are JSON numbers.
// Sites whose gates have at most k nonzeros (top-k routers) also give ln k, the largest entropy of such a
// gate; routers report the tokens no expert took, and a token capacity its dropped (token, slot) pairs and
// the use of its slots (expert_stats.h), beside the load and the entropy.
// Covered by tests/translator/experts_command_test.cpp.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "translator/expert_analysis.h"

namespace moe {

struct ExpertReport {
  std::string model, model_type, site_types;
  std::string input;  // pairs (teacher forcing on given targets) | hypotheses (on its own translations) | lm
  ExpertRunInfo info;
  ExpertAnalysisOptions options;
  int64_t min_count = 5;
  int top = 10;
  std::vector<SiteSummary> sites;
};

void write_expert_text(std::ostream& out, const ExpertReport& report);
void write_expert_json(std::ostream& out, const ExpertReport& report);

}  // namespace moe
