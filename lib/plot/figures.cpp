// figures.h implementation. Covered by tests/plot/plot_test.cpp.
#include "plot/figures.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "plot/chart.h"

namespace moe::plot {
namespace {
const std::vector<std::string> kMetricOrder = {"train loss", "valid loss", "valid ppl", "valid BLEU", "learning rate",
                                               "tokens/s"};

double number(const YAML::Node& n, const char* key, double fallback = NAN) {
  return n[key] && n[key].IsScalar() ? n[key].as<double>() : fallback;
}
}  // namespace

RunCurves read_run(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path file = fs::is_directory(path) ? fs::path(path) / "metrics.jsonl" : fs::path(path);
  std::ifstream in(file);
  MOE_CHECK(in.is_open(), "moe-plot: cannot read ", file.string(), " (a run folder written by moe-train?)");
  RunCurves r;
  r.name = fs::is_directory(path) ? fs::path(path).lexically_normal().filename().string() : file.stem().string();
  if (r.name.empty()) r.name = fs::absolute(path).lexically_normal().parent_path().filename().string();
  double seconds = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    YAML::Node n;
    try {
      n = YAML::Load(line);
    } catch (const YAML::Exception&) {
      ++r.skipped_lines;
      continue;
    }
    if (!n.IsMap() || !n["type"] || !n["update"]) {
      ++r.skipped_lines;
      continue;
    }
    const std::string type = n["type"].as<std::string>();
    const double update = number(n, "update");
    auto add = [&](const std::string& metric, double v) {
      if (std::isfinite(v)) r.metrics[metric].push_back({update, seconds, v});
    };
    if (type == "train") {
      const double tokens = number(n, "tokens", 0), rate = number(n, "tokens_per_s", 0);
      if (rate > 0) seconds += tokens / rate;
      add("train loss", number(n, "loss"));
      add("learning rate", number(n, "lr"));
      add("tokens/s", rate);
    } else if (type == "valid") {
      seconds += number(n, "seconds", 0);
      add("valid loss", number(n, "loss"));
      add("valid ppl", number(n, "ppl"));
      add("valid BLEU", number(n, "bleu"));
    }
  }
  return r;
}

std::string curves_svg(const std::vector<RunCurves>& runs, const std::string& x, const std::string& title) {
  MOE_CHECK(x == "update" || x == "time", "moe-plot: --x must be update or time, got '", x, "'");
  std::vector<std::string> metrics;
  for (const std::string& m : kMetricOrder)
    for (const RunCurves& r : runs)
      if (r.metrics.count(m) && std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
  const double pw = 420, ph = 260, legend = 24.0 + 16.0 * double((runs.size() + 3) / 4);
  const size_t rows = std::max<size_t>(1, (metrics.size() + 1) / 2);
  Svg svg(2 * pw + 20, 30 + legend + double(rows) * ph);
  svg.text(pw + 10, 20, title, 14, "middle", {{"class", "title"}});
  for (size_t i = 0; i < runs.size(); ++i) {
    const double lx = 20 + double(i % 4) * 210, ly = 40 + double(i / 4) * 16;
    svg.rect(lx, ly - 8, 14, 4, palette(i));
    svg.text(lx + 18, ly - 3, runs[i].name, 11, "start", {{"class", "legend"}, {"data-run", runs[i].name}});
  }
  const std::string x_label = x == "update" ? "update" : "training time (s)";
  for (size_t m = 0; m < metrics.size(); ++m) {
    std::vector<Series> series;
    for (size_t i = 0; i < runs.size(); ++i) {
      auto it = runs[i].metrics.find(metrics[m]);
      if (it == runs[i].metrics.end()) continue;
      Series s{runs[i].name, metrics[m], palette(i), {}};
      for (const MetricPoint& p : it->second) s.xy.emplace_back(x == "update" ? p.update : p.seconds, p.value);
      series.push_back(std::move(s));
    }
    line_panel(svg, 10 + double(m % 2) * (pw + 0), 30 + legend + double(m / 2) * ph, pw, ph, metrics[m], x_label,
               series);
  }
  if (metrics.empty()) svg.text(pw + 10, 30 + legend + 40, "no metrics in these runs", 12, "middle");
  return svg.str();
}

std::vector<SiteUsage> read_expert_sites(const std::string& path) {
  std::ifstream in(path);
  MOE_CHECK(in.is_open(), "moe-plot: cannot read ", path, " (the output of moe-score experts --format json)");
  std::vector<SiteUsage> sites;
  int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    YAML::Node n;
    try {
      n = YAML::Load(line);
    } catch (const YAML::Exception& e) {
      MOE_FAIL("moe-plot: ", path, ":", line_no, " is not JSON: ", e.what());
    }
    if (!n.IsMap() || !n["type"] || n["type"].as<std::string>() != "site") continue;
    SiteUsage s;
    s.site = n["site"].as<std::string>();
    s.family = n["family"] ? n["family"].as<std::string>() : "";
    const YAML::Node shares = n["routed_share"] ? n["routed_share"] : n["argmax_share"];
    MOE_CHECK(shares && shares.IsSequence(), "moe-plot: ", path, ":", line_no, ": site ", s.site,
              " has no argmax_share / routed_share list");
    for (const auto& v : shares) s.shares.push_back(v.as<double>());
    s.entropy = number(n, "entropy", 0);
    s.max_entropy = number(n, "max_entropy", 0);
    sites.push_back(std::move(s));
  }
  MOE_CHECK(!sites.empty(), "moe-plot: ", path, " has no site lines (moe-score experts --format json writes them)");
  return sites;
}

std::string experts_svg(const std::vector<SiteUsage>& sites, const std::string& title) {
  std::vector<HeatRow> rows;
  double most = 0;
  size_t cols = 0;
  for (const SiteUsage& s : sites) {
    char note[64];
    std::snprintf(note, sizeof note, "H %.2f / ln E %.2f", s.entropy, s.max_entropy);
    rows.push_back({s.site, s.shares, note});
    for (double v : s.shares) most = std::max(most, v);
    cols = std::max(cols, s.shares.size());
  }
  const double cell = cols > 32 ? 6 : 16;
  const double width = std::max({190 + double(cols) * cell + 140, 20 + 7.5 * double(title.size()), 190 + 6 * 36.0 + 20});
  Svg svg(width, 70 + heatmap_height(rows.size(), cell) + 10);  // the title and the colour scale fit
  svg.text(10, 18, title, 14, "start", {{"class", "title"}});
  heatmap(svg, 10, 60, cell, rows, most, "expert (share of instances; darker = more)");
  return svg.str();
}

}  // namespace moe::plot
