// table.h implementation. Covered by tests/bench/bench_test.cpp ("table").
#include "bench/table.h"

#include <cstdio>

#include "common/json.h"

namespace moe::bench {
namespace {
constexpr const char* kRowFormat = "%-34s %-26s %-5s %10s %9s %8s %8s %7s  %s";

std::string fmt(const char* f, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// "412.3k" for 412300.
std::string thousands(double v) { return fmt("%.1fk", v / 1e3); }

std::string note_of(const Row& r) {
  std::string note;
  if (r.tokens > 0) note = thousands(r.tokens_per_s()) + " tokens/s";
  if (r.ratio > 0) note += (note.empty() ? "" : "; ") + fmt("%.2fx", r.ratio) + " " + r.baseline;
  if (!r.note.empty()) note += (note.empty() ? "" : "; ") + r.note;
  if (!r.variant.empty()) note += (note.empty() ? "" : "; ") + std::string("kernel ") + r.variant;
  return note;
}
}  // namespace

std::string text_columns() {
  char buf[256];
  std::snprintf(buf, sizeof buf, kRowFormat, "name", "shape", "dtype", "median ms", "min ms", "TFLOP/s", "GB/s",
                "% ceil", "note");
  return std::string(buf) + "\n" + std::string(130, '-');
}

std::string text_row(const Row& r, const Ceilings& c) {
  const double frac = c.fraction(r);
  char buf[512];
  std::snprintf(buf, sizeof buf, kRowFormat, r.name().c_str(), r.shape.c_str(), r.dtype.c_str(),
                fmt("%.4f", r.timing.median_ms).c_str(), fmt("%.4f", r.timing.min_ms).c_str(),
                r.flops > 0 ? fmt("%.2f", r.tflops()).c_str() : "-", r.bytes > 0 ? fmt("%.1f", r.gbps()).c_str() : "-",
                frac > 0 ? fmt("%.1f", 100 * frac).c_str() : "-", note_of(r).c_str());
  return buf;
}

std::string json_row(const Row& r, const Ceilings& c, const std::string& device) {
  JsonObject o;
  o.add("name", r.name()).add("case", r.case_name).add("label", r.label).add("shape", r.shape).add("dtype", r.dtype);
  o.add("device", device).add("median_ms", r.timing.median_ms).add("min_ms", r.timing.min_ms);
  o.add("max_ms", r.timing.max_ms).add("calls", r.timing.calls);
  if (r.flops > 0) o.add("flops", r.flops).add("tflops", r.tflops());
  if (r.bytes > 0) o.add("bytes", r.bytes).add("gbps", r.gbps());
  if (r.tokens > 0) o.add("tokens", r.tokens).add("tokens_per_s", r.tokens_per_s());
  if (c.fraction(r) > 0) o.add("ceiling_fraction", c.fraction(r));
  if (r.ratio > 0) o.add("ratio", r.ratio).add("baseline", r.baseline);
  if (!r.note.empty()) o.add("note", r.note);
  if (!r.variant.empty()) o.add("variant", r.variant);
  return o.str();
}

}  // namespace moe::bench
