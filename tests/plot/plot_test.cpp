// moe-plot: the SVG is well-formed XML; curves draw one line per run and metric, with labelled axes,
// points inside the plot and in the data's order (a falling loss goes down the picture), on updates or
// training time; a half-written last line of metrics.jsonl is skipped with a note; the expert heatmap
// has one cell per site and expert carrying its share and a colour scale labelled with its values; a
// series of one point (the demo's single validation) shows as a marker on whole-update ticks; errors
// name the file and line.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "moe-plot/plot_cli.h"
#include "plot/chart.h"

using namespace moe::plot;
namespace fs = std::filesystem;

namespace {
/// Well-formedness: every tag closes in order, attributes are quoted, text has no raw '<' or '&'.
bool well_formed(const std::string& s, std::string& why) {
  std::vector<std::string> open;
  size_t i = s.find("<svg");
  if (s.rfind("<?xml", 0) != 0 || i == std::string::npos) return why = "no XML declaration or svg root", false;
  while (i < s.size()) {
    if (s[i] != '<') {
      const size_t next = s.find('<', i);
      const std::string text = s.substr(i, next - i);
      if (std::regex_search(text, std::regex("&(?!(amp|lt|gt|quot|apos);)"))) return why = "raw & in text", false;
      i = next;
      continue;
    }
    const size_t end = s.find('>', i);
    if (end == std::string::npos) return why = "unclosed tag", false;
    const std::string tag = s.substr(i + 1, end - i - 1);
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return why = "mismatched </" + tag.substr(1) + ">", false;
      open.pop_back();
    } else {
      static const std::regex element(R"(^[a-z]+( [A-Za-z0-9:-]+="[^"<>]*")*( ?/)?$)");
      if (!std::regex_match(tag, element)) return why = "bad tag <" + tag + ">", false;
      if (tag.back() != '/') open.push_back(tag.substr(0, tag.find(' ')));
    }
    i = end + 1;
  }
  if (!open.empty()) return why = "<" + open.back() + "> never closed", false;
  return true;
}

int run(const std::vector<std::string>& args, std::string& out, std::string& err) {
  std::vector<const char*> argv{"moe-plot"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream o, e;
  const int rc = plot_main(int(argv.size()), argv.data(), o, e);
  out = o.str(), err = e.str();
  return rc;
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream b;
  b << f.rdbuf();
  return b.str();
}

/// A run folder with train lines every 10 updates and validation every 50 (loss falling).
void write_run(const fs::path& dir, double offset, bool truncated_tail) {
  fs::create_directories(dir);
  std::ofstream f(dir / "metrics.jsonl");
  for (int u = 10; u <= 100; u += 10) {
    f << R"({"type":"train","epoch":1,"update":)" << u << R"(,"loss":)" << 6.0 - u * 0.03 + offset
      << R"(,"ppl":1,"lr":)" << 1e-4 * u << R"(,"gnorm":1,"tokens":5000,"tokens_per_s":)" << 1000 + u << "}\n";
    if (u % 50 == 0)
      f << R"({"type":"valid","epoch":1,"update":)" << u << R"(,"loss":)" << 5.5 - u * 0.02 + offset << R"(,"ppl":)"
        << 100 - u / 2 << R"(,"bleu":)" << u / 5.0 << R"(,"seconds":2.5})"
        << "\n";
  }
  if (truncated_tail) f << R"({"type":"train","epoch":1,"upd)";
}

/// Every polyline: (run, metric) -> its points.
std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> polylines(
    const std::string& svg) {
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> out;
  static const std::regex line(R"re(<polyline points="([^"]*)"[^>]*data-run="([^"]*)" data-metric="([^"]*)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator(); ++it) {
    std::vector<std::pair<double, double>> pts;
    std::istringstream ps((*it)[1].str());
    for (std::string xy; ps >> xy;)
      pts.emplace_back(std::stod(xy.substr(0, xy.find(','))), std::stod(xy.substr(xy.find(',') + 1)));
    out[{(*it)[2].str(), (*it)[3].str()}] = pts;
  }
  return out;
}
}  // namespace

TEST_CASE("nice ticks", "[plot]") {
  CHECK(nice_ticks(0, 100) == std::vector<double>{0, 20, 40, 60, 80, 100});
  const std::vector<double> t = nice_ticks(0.13, 0.61);
  REQUIRE(t.size() == 5);
  for (size_t i = 0; i < t.size(); ++i) CHECK(t[i] == Approx(0.2 + 0.1 * double(i)));
  CHECK(nice_ticks(3, 3).size() >= 2);
  CHECK(nice_ticks(0, 3, 5, 1) == std::vector<double>{0, 1, 2, 3});  // whole updates: no step below 1
}

TEST_CASE("moe-plot curves marks a single validation on whole-update ticks", "[plot]") {
  const fs::path dir = fs::temp_directory_path() / ("moe-plot-single-" + std::to_string(::getpid()));
  fs::create_directories(dir / "demo");
  {
    std::ofstream f(dir / "demo" / "metrics.jsonl");
    f << R"({"type":"train","epoch":1,"update":1270,"loss":3.1,"ppl":1,"lr":1e-4,"gnorm":1,"tokens":5000,"tokens_per_s":900})"
      << "\n";
    f << R"({"type":"valid","epoch":1,"update":1275,"loss":2.5,"ppl":12.2,"bleu":31.4,"seconds":2.5})"
      << "\n";
  }
  std::string out, err, why;
  REQUIRE(run({"curves", (dir / "demo").string()}, out, err) == 0);
  CHECK(well_formed(out, why));
  INFO(why);
  CHECK(polylines(out).empty());  // one point per series: no line to draw
  static const std::regex marker(R"re(<circle cx="([0-9.]+)" cy="([0-9.]+)"[^>]*class="marker" data-run="demo" data-metric="([^"]*)")re");
  std::set<std::string> marked;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), marker); it != std::sregex_iterator(); ++it) {
    marked.insert((*it)[3].str());
    CHECK(std::stod((*it)[1].str()) > 58);  // inside the panel, not on its axis
  }
  CHECK(marked.count("valid BLEU"));
  CHECK(marked.count("train loss"));
  static const std::regex x_tick(R"re(text-anchor="middle" class="tick">([^<]*)</text>)re");
  size_t x_ticks = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), x_tick); it != std::sregex_iterator(); ++it, ++x_ticks)
    CHECK((*it)[1].str().find('.') == std::string::npos);  // updates are whole numbers
  CHECK(x_ticks >= 12);  // at least two per panel
  fs::remove_all(dir);
}

TEST_CASE("moe-plot curves overlays runs, one line per run and metric", "[plot]") {
  const fs::path dir = fs::temp_directory_path() / ("moe-plot-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  write_run(dir / "base", 0, false);
  write_run(dir / "mae-7", -0.3, true);  // still running: a half-written last line
  std::string out, err, why;
  REQUIRE(run({"curves", (dir / "base").string(), (dir / "mae-7").string(), "-o", (dir / "c.svg").string()}, out,
              err) == 0);
  CHECK(out.empty());
  CHECK(err.find("mae-7: skipped 1 line(s)") != std::string::npos);
  const std::string svg = read(dir / "c.svg");
  CHECK(well_formed(svg, why));
  INFO(why);
  const auto lines = polylines(svg);
  const char* metrics[] = {"train loss", "valid loss", "valid ppl", "valid BLEU", "learning rate", "tokens/s"};
  CHECK(lines.size() == 12);
  for (const char* run_name : {"base", "mae-7"})
    for (const char* m : metrics) {
      INFO(run_name << " " << m);
      REQUIRE(lines.count({run_name, m}));
      const auto& pts = lines.at({run_name, m});
      CHECK(pts.size() == (std::string(m).rfind("valid", 0) == 0 ? 2u : 10u));
      for (size_t i = 0; i < pts.size(); ++i) {
        CHECK(pts[i].first > 0);
        CHECK(pts[i].first < 860);
        CHECK(pts[i].second > 0);
        if (i) CHECK(pts[i].first > pts[i - 1].first);  // updates increase to the right
      }
    }
  const auto& loss = lines.at({"base", "train loss"});
  CHECK(loss.back().second > loss.front().second);                              // a falling loss goes down the picture
  CHECK(lines.at({"mae-7", "train loss"}).back().second > loss.back().second);  // mae-7's is lower still
  CHECK(svg.find(">update</text>") != std::string::npos);
  CHECK(svg.find(">train loss</text>") != std::string::npos);
  CHECK(svg.find("data-run=\"mae-7\">mae-7</text>") != std::string::npos);  // the legend

  REQUIRE(run({"curves", (dir / "base").string(), "--x", "time"}, out, err) == 0);  // to stdout
  CHECK(well_formed(out, why));
  INFO(why);
  CHECK(out.find(">training time (s)</text>") != std::string::npos);
  CHECK(polylines(out).size() == 6);

  CHECK(run({"curves", (dir / "nope").string()}, out, err) == 1);
  CHECK(err.find("nope") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("moe-plot experts draws a cell per site and expert", "[plot]") {
  const fs::path dir = fs::temp_directory_path() / ("moe-plot-experts-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "e.jsonl");
    f << R"({"type":"site","site":"encoder.l0.self_attn","family":"mae","entropy":1.2,"max_entropy":1.386,"argmax_share":[0.1,0.2,0.3,0.4]})"
      << "\n";
    f << R"({"type":"site","site":"decoder.l1.ffn","family":"moe","entropy":0.9,"max_entropy":2.079,"argmax_share":[1,0,0,0,0,0,0,0],"routed_share":[0.5,0.1,0.1,0.1,0.1,0.05,0.05,0]})"
      << "\n";
    f << R"({"type":"summary","sites":2})"
      << "\n";
  }
  std::string out, err, why;
  REQUIRE(run({"experts", (dir / "e.jsonl").string(), "--title", "MAE & MoE <test>"}, out, err) == 0);
  CHECK(well_formed(out, why));
  INFO(why);
  CHECK(out.find("MAE &amp; MoE &lt;test&gt;") != std::string::npos);
  static const std::regex cell(R"re(class="cell" data-row="(\d+)" data-col="(\d+)" data-value="([0-9.]+)")re");
  std::vector<double> values;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), cell); it != std::sregex_iterator(); ++it)
    values.push_back(std::stod((*it)[3].str()));
  REQUIRE(values.size() == 12);
  CHECK(values[3] == Approx(0.4));
  CHECK(values[4] == Approx(0.5));  // routed shares for a top-k router
  CHECK(out.find(">decoder.l1.ffn</text>") != std::string::npos);
  CHECK(out.find("H 1.20 / ln E 1.39") != std::string::npos);
  static const std::regex swatch(R"re(fill="(#[0-9a-f]{6})" class="scale" data-value="([0-9.]+)")re");
  std::vector<std::pair<std::string, double>> scale;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), swatch); it != std::sregex_iterator(); ++it)
    scale.emplace_back((*it)[1].str(), std::stod((*it)[2].str()));
  REQUIRE(scale.size() == 6);
  CHECK(scale.front().second == 0);
  CHECK(scale.back().second == Approx(0.5));  // the largest share drawn (routed_share for the top-k site)
  CHECK(scale.front().first == "#ffffff");
  CHECK(out.find(">0.30</text>") != std::string::npos);  // swatches are labelled with their values
  {
    std::ofstream f(dir / "bad.jsonl");
    f << R"({"type":"site","site":"x","argmax_share":[1]})"
      << "\n{not json\n";
  }
  CHECK(run({"experts", (dir / "bad.jsonl").string()}, out, err) == 1);
  CHECK(err.find("bad.jsonl:2") != std::string::npos);
  fs::remove_all(dir);
}
