// The moe-plot command line: `moe-plot curves RUN_DIR... [-o OUT.svg] [--x update|time]` and
// `moe-plot experts EXPERTS.jsonl [-o OUT.svg]` (figures.h); SVG to -o or stdout, a note on stderr for
// metrics lines that were skipped; the subcommands are a cli::SubcommandTable. Covered by
// tests/plot/plot_test.cpp.
#pragma once
#include <iosfwd>

namespace moe::plot {

/// main() of moe-plot with explicit streams (tests); returns the exit code.
int plot_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace moe::plot
