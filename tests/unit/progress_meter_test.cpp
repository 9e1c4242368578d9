// ProgressMeter (common/progress_meter.h): the report text (counts, percentage, rates, elapsed, ETA;
// unknown totals), plain lines every log_every seconds off a terminal, one line redrawn in place on a
// terminal (at most 5 times a second) and erased by finish(), nothing at all with log_every 0.
#include <catch2/catch.hpp>
#include <sstream>

#include "common/progress_meter.h"

using namespace moe;

TEST_CASE("progress text", "[progress]") {
  CHECK(progress_text("moe-translate", "lines", 1200, 3000, 28000, 34) ==
        "moe-translate: 1200/3000 lines (40.0%), 35.3 lines/s, 824 tokens/s, 0:34 elapsed, ETA 0:51");
  CHECK(progress_text("moe-score ppl", "tokens", 500, -1, -1, 3725) ==
        "moe-score ppl: 500 tokens, 0.1 tokens/s, 1:02:05 elapsed");
  CHECK(progress_text("x", "lines", 0, 10, -1, 0) == "x: 0/10 lines (0.0%), 0:00 elapsed");
}

TEST_CASE("progress meter: plain lines off a terminal, one redrawn line on a terminal", "[progress]") {
  double now = 100;
  auto clock = [&now] { return now; };
  std::ostringstream plain;
  ProgressMeter off(plain, {.name = "t", .unit = "lines", .total = 10, .log_every = 5, .terminal = false, .clock = clock});
  now = 102, off.update(2);  // too soon
  CHECK(plain.str().empty());
  now = 106, off.update(6);
  now = 108, off.update(8);  // too soon after the last line
  now = 111.5, off.update(9);
  off.finish();
  CHECK(plain.str() == "t: 6/10 lines (60.0%), 1.0 lines/s, 0:06 elapsed, ETA 0:04\n"
                       "t: 9/10 lines (90.0%), 0.8 lines/s, 0:12 elapsed, ETA 0:01\n");

  std::ostringstream tty;
  ProgressMeter on(tty, {.name = "t", .unit = "lines", .total = -1, .log_every = 30, .terminal = true, .clock = clock});
  now = 111.6, on.update(1);  // within 0.2 s of the start
  now = 112, on.update(3, 60);
  on.finish();
  CHECK(tty.str() == "\rt: 3 lines, 6.0 lines/s, 120 tokens/s, 0:01 elapsed\033[K\r\033[K");

  std::ostringstream none;
  ProgressMeter never(none, {.name = "t", .unit = "lines", .total = 5, .log_every = 0, .terminal = false, .clock = clock});
  now = 1000, never.update(5);
  never.finish();
  CHECK(none.str().empty());
}
