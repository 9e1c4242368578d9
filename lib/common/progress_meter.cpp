// progress_meter.h implementation. Covered by tests/unit/progress_meter_test.cpp.
#include "common/progress_meter.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace moe {
namespace {
std::string clock_text(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}
double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string progress_text(const std::string& name, const std::string& unit, int64_t done, int64_t total, int64_t tokens,
                          double elapsed) {
  char buf[256];
  std::string s = name + ": " + std::to_string(done);
  if (total >= 0) {
    std::snprintf(buf, sizeof buf, "/%lld %s (%.1f%%)", static_cast<long long>(total), unit.c_str(),
                  total > 0 ? 100.0 * double(done) / double(total) : 100.0);
    s += buf;
  } else {
    s += " " + unit;
  }
  if (elapsed > 0) {
    std::snprintf(buf, sizeof buf, ", %.1f %s/s", double(done) / elapsed, unit.c_str());
    s += buf;
    if (tokens >= 0) {
      std::snprintf(buf, sizeof buf, ", %.0f tokens/s", double(tokens) / elapsed);
      s += buf;
    }
  }
  s += ", " + clock_text(elapsed) + " elapsed";
  if (total > 0 && done > 0 && done < total) s += ", ETA " + clock_text(elapsed * double(total - done) / double(done));
  return s;
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) != 0; }

ProgressMeter::ProgressMeter(std::ostream& err, Options options) : err_(err), o_(std::move(options)) {
  if (!o_.clock) o_.clock = steady_seconds;
  start_ = last_ = o_.clock();
}

void ProgressMeter::update(int64_t done, int64_t tokens) {
  const double now = o_.clock();
  const double every = o_.terminal ? 0.2 : o_.log_every;
  if (every <= 0 || now - last_ < every) return;
  last_ = now;
  const std::string text = progress_text(o_.name, o_.unit, done, o_.total, tokens, now - start_);
  if (o_.terminal) {
    err_ << "\r" << text << "\033[K" << std::flush;
    drawn_ = true;
  } else {
    err_ << text << "\n" << std::flush;
  }
}

void ProgressMeter::finish() {
  if (drawn_) err_ << "\r\033[K" << std::flush;
  drawn_ = false;
}

}  // namespace moe
