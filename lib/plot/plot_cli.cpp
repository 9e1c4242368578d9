// plot_cli.h implementation (CLI11 subcommands). Covered by tests/plot/plot_test.cpp.
#include "plot/plot_cli.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <ostream>

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
}  // namespace

int plot_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app("moe-plot: SVG pictures of training runs and of expert usage", "moe-plot");
  app.require_subcommand(1);
  std::vector<std::string> runs;
  std::string output = "-", x = "update", title, experts;
  CLI::App* curves = app.add_subcommand(
      "curves", "training loss, validation loss / perplexity / BLEU, learning rate and tokens/s of one or more runs");
  curves->add_option("runs", runs, "run folders (or metrics.jsonl files) to overlay")->required();
  curves->add_option("--x", x, "x axis: update or time (training seconds)")
      ->check(CLI::IsMember({"update", "time"}))
      ->capture_default_str();
  CLI::App* heat = app.add_subcommand("experts", "a heatmap of expert usage per site (moe-score experts --format json)");
  heat->add_option("input", experts, "the JSON lines of moe-score experts --format json")->required();
  for (CLI::App* sub : {curves, heat}) {
    sub->add_option("-o,--output", output, "the SVG file ('-' = stdout)")->capture_default_str();
    sub->add_option("--title", title, "the picture's title");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }
  try {
    if (curves->parsed()) {
      std::vector<RunCurves> read;
      for (const std::string& r : runs) {
        read.push_back(read_run(r));
        if (read.back().skipped_lines)
          err << "moe-plot: " << r << ": skipped " << read.back().skipped_lines
              << " line(s) of metrics.jsonl that are not complete JSON (a run still writing?)\n";
      }
      write_svg(curves_svg(read, x, title.empty() ? "training curves" : title), output, out);
    } else {
      write_svg(experts_svg(read_expert_sites(experts), title.empty() ? "expert usage: " + experts : title), output,
                out);
    }
  } catch (const Error& e) {
    err << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace moe::plot
