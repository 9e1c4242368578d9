// aer_command.h implementation: reads the gold and hypothesis files line by line (the same line counts), sums the
// counts of every pair and prints AER, precision and recall as text or one JSON object.
// Covered by tests/metrics/aer_test.cpp.
#include "moe-score/aer_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <ostream>

#include "common/error.h"
#include "metrics/aer.h"
#include "metrics/read_lines.h"

namespace moe::metrics {

namespace {

struct AerOptions {
  std::string reference, input = "-", format = "text";
  bool one_based = false;
  int width = 2;
};

std::string percent(double v, int width) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", width, 100.0 * v);
  return buf;
}

}  // namespace

cli::SubcommandRunner setup_aer(CLI::App& sub) {
  auto o = std::make_shared<AerOptions>();
  sub.add_option("-r,--ref", o->reference,
                 "gold alignments, one line per pair: 's-t' sure links, 's?t' or 'spt' possible ones")
      ->required();
  sub.add_option("-i,--input", o->input,
                 "hypothesis alignments, one line of 's-t' links per pair ('-' = stdin; e.g. moe-score pairs "
                 "--alignment hard --alignment-words | cut -f3)")
      ->capture_default_str();
  sub.add_flag("--one-based", o->one_based, "positions count from 1 in both files (talp gold sets), not from 0");
  sub.add_option("-w,--width", o->width, "decimals printed")->capture_default_str();
  sub.add_option("-f,--format", o->format, "output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return [o](std::ostream& out, std::ostream&) {
    const std::vector<std::string> gold = read_lines(o->reference), hyp = read_lines(o->input);
    const std::string hyp_name = o->input == "-" ? "<stdin>" : o->input;
    MOE_CHECK(gold.size() == hyp.size(), "aer: line counts differ: hypotheses '", hyp_name, "' have ", hyp.size(),
              " lines, gold '", o->reference, "' has ", gold.size());
    AerCounts c;
    for (size_t i = 0; i < gold.size(); ++i) {
      GoldLinks g;
      std::set<Link> a;
      try {
        g = parse_gold_links(gold[i], o->one_based);
      } catch (const Error& e) {
        MOE_FAIL("aer: ", o->reference, ":", i + 1, ": ", e.what());
      }
      try {
        a = parse_hypothesis_links(hyp[i], o->one_based);
      } catch (const Error& e) {
        MOE_FAIL("aer: ", hyp_name, ":", i + 1, ": ", e.what());
      }
      c.add(a, g);
    }
    const int w = o->width;
    if (o->format == "json") {
      out << "{\"name\": \"AER\", \"score\": " << percent(c.aer(), w)
          << ", \"precision\": " << percent(c.precision(), w) << ", \"recall\": " << percent(c.recall(), w)
          << ", \"lines\": " << gold.size() << ", \"hypothesis_links\": " << c.hypothesis
          << ", \"sure_links\": " << c.sure << ", \"possible_links\": " << c.possible << "}\n";
      return 0;
    }
    out << "AER = " << percent(c.aer(), w) << " (precision " << percent(c.precision(), w) << ", recall "
        << percent(c.recall(), w) << "; " << gold.size() << " lines, " << c.hypothesis << " hypothesis links, "
        << c.sure << " sure and " << c.possible << " possible gold links)\n";
    return 0;
  };
}

}  // namespace moe::metrics
