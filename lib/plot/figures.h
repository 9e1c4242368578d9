// The two pictures of moe-plot.
//   curves: from run folders (their metrics.jsonl, written by moe-train), one panel per metric (training
//     loss, validation loss, perplexity and BLEU, learning rate, tokens/s) against updates or training
//     time (the sum of tokens / tokens_per_s over the logged windows, plus validation seconds), one line
//     per run, so a baseline and its MAE / MoA / MoE variants overlay. Lines that do not parse (a
//     half-written last line of a running job) are skipped and counted.
//   experts: from `moe-score experts --format json`, a heatmap of each site's share of instances (or of
//     routed (token, slot) pairs) per expert, with its gate entropy against ln E beside it.
// Covered by tests/plot/plot_test.cpp.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace moe::plot {

struct MetricPoint {
  double update = 0, seconds = 0, value = 0;
};
struct RunCurves {
  std::string name;                                        // the run folder's name
  std::map<std::string, std::vector<MetricPoint>> metrics;  // "train loss", "valid BLEU", ...
  int64_t skipped_lines = 0;                               // lines of metrics.jsonl that did not parse
};

/// Reads a run folder (its metrics.jsonl) or a metrics.jsonl file.
RunCurves read_run(const std::string& path);
/// The SVG of the runs' curves; x: "update" or "time".
std::string curves_svg(const std::vector<RunCurves>& runs, const std::string& x, const std::string& title);

struct SiteUsage {
  std::string site, family;
  std::vector<double> shares;  // per expert, summing to 1
  double entropy = 0, max_entropy = 0;
};
/// The sites of a `moe-score experts --format json` output (its "site" lines).
std::vector<SiteUsage> read_expert_sites(const std::string& path);
std::string experts_svg(const std::vector<SiteUsage>& sites, const std::string& title);

}  // namespace moe::plot
