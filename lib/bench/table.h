// moe-bench output: a fixed-width text table (a commented header with the device, the settings and the
// measured ceilings, then one line per row) or JSON lines (one object per row, for docs/PERF.md and
// scripts). Columns: name (case/kernel), shape, dtype, median ms, min ms, TFLOP/s, GB/s, % of the
// ceiling (compute for FLOP rows, copy bandwidth for byte rows), note (tokens/s of whole-model rows,
// time ratio to a baseline row, checks). scripts/bench_torch.py prints the same columns. Covered by
// tests/bench/bench_test.cpp.
#pragma once
#include <string>

#include "bench/bench.h"

namespace moe::bench {

/// The two text lines above the rows: column titles and a rule.
std::string text_columns();
std::string text_row(const Row& row, const Ceilings& ceilings);
/// One JSON object (no newline) with every field of the row and its derived rates.
std::string json_row(const Row& row, const Ceilings& ceilings, const std::string& device);

}  // namespace moe::bench
