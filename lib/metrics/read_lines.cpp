// read_lines.h implementation. Covered by tests/metrics/score_cli_test.cpp.
#include "metrics/read_lines.h"

#include <fstream>
#include <iostream>

#include "common/error.h"
#include "data/utf8.h"

namespace moe::metrics {

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    MOE_CHECK(file.is_open(), "cannot open '", path, "'");
    in = &file;
  }
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(*in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t bad = data::find_invalid_utf8(line);
    MOE_CHECK(bad == std::string::npos, "'", path, "' line ", lines.size() + 1, " is not valid UTF-8 (byte ", bad + 1,
              " of the line); sacreBLEU would refuse it too");
    lines.push_back(std::move(line));
  }
  MOE_CHECK(!in->bad(), "error reading '", path, "'");
  return lines;
}

}  // namespace moe::metrics
