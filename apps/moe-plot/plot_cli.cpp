// plot_cli.h implementation: the table of moe-plot's subcommands (one line each). Covered by
// tests/plot/plot_test.cpp.
#include "moe-plot/plot_cli.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>
#include <ostream>

#include "cli/subcommand_table.h"
#include "common/error.h"
#include "plot/figures.h"

namespace moe::plot {
namespace {
void write_svg(const std::string& svg, const std::string& path, std::ostream& out) {
  if (path == "-") {
    out << svg;
    return;
  }
  std::ofstream f(path, std::ios::binary);
  MOE_CHECK(f.is_open(), "moe-plot: cannot write '", path, "'");
  f << svg;
  MOE_CHECK(f.good(), "moe-plot: error writing '", path, "'");
}

/// The options both pictures take.
struct Output {
  std::string path = "-", title;
  void add(CLI::App& sub) {
    sub.add_option("-o,--output", path, "the SVG file ('-' = stdout)")->capture_default_str();
    sub.add_option("--title", title, "the picture's title");
  }
};

cli::SubcommandRunner setup_curves(CLI::App& sub) {
  struct Args {
    std::vector<std::string> runs;
    std::string x = "update";
    Output o;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("runs", a->runs, "run folders (or metrics.jsonl files) to overlay")->required();
  sub.add_option("--x", a->x, "x axis: update or time (training seconds)")
      ->check(CLI::IsMember({"update", "time"}))
      ->capture_default_str();
  a->o.add(sub);
  return [a](std::ostream& out, std::ostream& err) {
    std::vector<RunCurves> read;
    for (const std::string& r : a->runs) {
      read.push_back(read_run(r));
      if (read.back().skipped_lines)
        err << "moe-plot: " << r << ": skipped " << read.back().skipped_lines
            << " line(s) of metrics.jsonl that are not complete JSON (a run still writing?)\n";
    }
    write_svg(curves_svg(read, a->x, a->o.title.empty() ? "training curves" : a->o.title), a->o.path, out);
    return 0;
  };
}

cli::SubcommandRunner setup_experts(CLI::App& sub) {
  struct Args {
    std::string input;
    Output o;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("input", a->input, "the JSON lines of moe-score experts --format json")->required();
  a->o.add(sub);
  return [a](std::ostream& out, std::ostream&) {
    write_svg(experts_svg(read_expert_sites(a->input), a->o.title.empty() ? "expert usage: " + a->input : a->o.title),
              a->o.path, out);
    return 0;
  };
}
}  // namespace

int plot_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const cli::SubcommandTable table(
      "moe-plot", "moe-plot: SVG pictures of training runs and of expert usage",
      {
          {"curves",
           "training loss, validation loss / perplexity / BLEU, learning rate and tokens/s of one or more runs",
           setup_curves},
          {"experts", "a heatmap of expert usage per site (moe-score experts --format json)", setup_experts},
      });
  return table.run(std::vector<std::string>(argv, argv + argc), out, err);
}

}  // namespace moe::plot
