// The lines of a text file as the metrics read them: "-" is stdin, a trailing "\r" is dropped, and a
// line that is not valid UTF-8 is an error naming the file, the line and the byte (sacreBLEU refuses
// such input too). Covered by tests/metrics/score_cli_test.cpp.
#pragma once
#include <string>
#include <vector>

namespace moe::metrics {

std::vector<std::string> read_lines(const std::string& path);

}  // namespace moe::metrics
