// input_lines.h implementation. Covered by tests/translator/input_lines_test.cpp.
#include "translator/input_lines.h"

#include <sstream>

#include "common/error.h"
#include "data/utf8.h"

namespace moe {

InputLines::InputLines(std::istream& in, std::string name) : in_(in), name_(std::move(name)) {}

bool InputLines::next_chunk(int64_t max_lines, std::vector<std::string>& chunk) {
  chunk.clear();
  std::string line;
  while (static_cast<int64_t>(chunk.size()) < max_lines && std::getline(in_, line)) {
    ++lines_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (data::replace_invalid_utf8(line) > 0 && invalid_utf8_++ < 5) invalid_utf8_first_.push_back(lines_);
    chunk.push_back(std::move(line));
  }
  MOE_CHECK(!in_.bad(), "error reading '", name_, "'");
  return !chunk.empty();
}

std::string InputLines::warning() const {
  if (invalid_utf8_ == 0) return "";
  std::ostringstream os;
  os << invalid_utf8_ << " input line(s) of '" << name_ << "' were not valid UTF-8 (line";
  for (int64_t n : invalid_utf8_first_) os << ' ' << n;
  os << (invalid_utf8_ > 5 ? " ..." : "") << "); their invalid bytes were translated as U+FFFD";
  return os.str();
}

}  // namespace moe
