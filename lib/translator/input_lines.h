// moe-translate's input: the lines of a stream (stdin or a file) in chunks, a trailing '\r' dropped
// (CRLF files), bytes that are not UTF-8 replaced by U+FFFD (data/utf8.h) and counted with the
// numbers of the first such lines, so that every input line gives exactly one line to translate.
// Covered by tests/translator/input_lines_test.cpp and the fuzz harness tests/fuzz/translate_input.cpp.
#pragma once
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace moe {

class InputLines {
 public:
  /// `name` is the input as the user gave it ("-" for stdin), for messages.
  InputLines(std::istream& in, std::string name);
  /// Reads up to `max_lines` more lines into `chunk` (cleared first); false when none was left.
  /// A read error is a moe::Error naming the input.
  bool next_chunk(int64_t max_lines, std::vector<std::string>& chunk);
  int64_t lines() const { return lines_; }
  int64_t invalid_utf8() const { return invalid_utf8_; }
  /// "" when every line was UTF-8, else the warning that names the input and the first such lines.
  std::string warning() const;

 private:
  std::istream& in_;
  std::string name_;
  int64_t lines_ = 0, invalid_utf8_ = 0;
  std::vector<int64_t> invalid_utf8_first_;  // 1-based line numbers, the first five
};

}  // namespace moe
