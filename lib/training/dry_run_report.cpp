// dry_run.h implementation, part 3: the report moe-train --dry-run prints, and memory sizes as
// options take them. Covered by tests/training/dry_run_test.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/error.h"
#include "tensor/allocator.h"
#include "training/dry_run.h"

namespace moe {

namespace {
std::string count(double n) {
  if (n >= 1e9) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f}M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.1f}K", n / 1e3);
  return fmt::format("{:.0f}", n);
}
std::string bytes(double b) { return format_bytes(static_cast<size_t>(std::max(0.0, b))); }
}  // namespace

int64_t DryRunReport::training_bytes() const {
  int64_t total = 0;
  for (const MemoryTerm& t : memory) total += t.bytes;
  return total;
}

const MemoryTerm& DryRunReport::largest() const {
  MOE_CHECK(!memory.empty(), "DryRunReport: no memory terms");
  return *std::max_element(memory.begin(), memory.end(),
                           [](const MemoryTerm& a, const MemoryTerm& b) { return a.bytes < b.bytes; });
}

std::string DryRunReport::render() const {
  std::string s = fmt::format("model            {} (vocabulary {}{})\n", model_type, src_vocab,
                              tgt_vocab != src_vocab ? fmt::format(" -> {}", tgt_vocab) : std::string());
  s += fmt::format("parameters       {} total", count(static_cast<double>(parameters)));
  if (experts > 0 && expert_parameters > 0)
    s += fmt::format(", {} per expert ({} experts per site, {:g} active{}{}), {} active per token",
                     count(static_cast<double>(per_expert)), experts, active,
                     shared > 0 ? fmt::format(" + {} shared", shared) : std::string(),
                     mixed_sites ? "; other sites differ" : "", count(static_cast<double>(active_per_token)));
  s += "\n";
  s += fmt::format("FLOPs            {} per target token forward, {} training (3x)\n", count(forward_flops_per_token),
                   count(train_flops_per_token));
  s += fmt::format("batch            {} rows x {} tokens, {} target tokens (train.max_tokens at the longest length)\n",
                   batch_rows, batch_length, batch_targets);
  s += "updates/epoch    " +
       (updates_per_epoch > 0 ? std::to_string(updates_per_epoch) : std::string("unknown (no data)")) +
       (ranks > 1 ? fmt::format(" ({} ranks)", ranks) : std::string()) + "\n";
  s += "schedule         " + schedule + "\n";
  s += fmt::format("memory per GPU   (budget {})\n", bytes(budget));
  for (const MemoryTerm& t : memory) s += fmt::format("  {:<34} {:>12}\n", t.name, bytes(static_cast<double>(t.bytes)));
  s += fmt::format("  {:<34} {:>12}\n", "training total", bytes(static_cast<double>(training_bytes())));
  s += fmt::format("  {:<34} {:>12}\n", "validation (valid.max_tokens)", bytes(static_cast<double>(validation_bytes)));
  if (fits()) return s + "fits\n";
  const bool valid = validation_bytes > training_bytes();
  return s + fmt::format("does not fit: {} needed, {} available; the largest term: {} ({}){}\n",
                         bytes(static_cast<double>(std::max(training_bytes(), validation_bytes))), bytes(budget),
                         largest().name, bytes(static_cast<double>(largest().bytes)),
                         valid ? "; validation needs more than training: lower valid.max_tokens" : "");
}

double parse_memory_size(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit(end ? end : "");
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KiB")
    scale = 1024.0;
  else if (unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "TiB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "GB")
    scale = 1e9;
  else if (unit == "MB")
    scale = 1e6;
  MOE_CHECK(end != text.c_str() && scale > 0 && v > 0 && std::isfinite(v), option, ": '", text,
            "' is not a memory size (e.g. 80GiB, 512MiB, 40GB, 1e9)");
  return v * scale;
}

}  // namespace moe
