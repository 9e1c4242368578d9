// Progress of a long command (moe-translate, moe-score ppl) on its error stream, never on stdout: on a
// terminal one line redrawn in place (at most 5 times a second),
//   moe-translate: 1200/3000 lines (40.0%), 35.2 lines/s, 812 tokens/s, 0:34 elapsed, ETA 0:51
// and off a terminal the same text as a plain line every `log_every` seconds (0: never). An unknown
// total (-1) drops the percentage and the ETA; tokens < 0 drops the token rate.
// Covered by tests/unit/progress_meter_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace moe {

/// The text of one report (no line ending).
std::string progress_text(const std::string& name, const std::string& unit, int64_t done, int64_t total, int64_t tokens,
                          double elapsed_seconds);

/// Whether standard error is a terminal (where a line can be redrawn).
bool stderr_is_terminal();

class ProgressMeter {
 public:
  struct Options {
    std::string name;  // "moe-translate"
    std::string unit;  // "lines"
    int64_t total = -1;
    double log_every = 30;  // seconds between plain lines off a terminal; 0 = none
    bool terminal = false;  // redraw one line in place
    std::function<double()> clock = nullptr;  // seconds; nullptr: a steady clock
  };
  ProgressMeter(std::ostream& err, Options options);
  /// Cumulative counts so far (tokens < 0: unknown).
  void update(int64_t done, int64_t tokens = -1);
  /// Erases the terminal line (before the command's own summary).
  void finish();

 private:
  std::ostream& err_;
  Options o_;
  double start_ = 0, last_ = 0;
  bool drawn_ = false;
};

}  // namespace moe
