// Fuzzes moe-translate's input side (lib/translator/input_lines.cpp, then the source vocabulary's
// encode as translate_lines calls it): arbitrary bytes, read in chunks of 3 lines. Invariants: one
// line per '\n' plus an unterminated last one (the 1:1 promise of moe-translate), every line valid UTF-8
// without '\n', every id inside the vocabulary. Seeds: tests/fuzz/seeds/translate_input.
#include <algorithm>
#include <sstream>

#include "data/utf8.h"
#include "data/vocab.h"
#include "fuzz_support.h"
#include "translator/input_lines.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const moe::data::WordVocab vocab(std::vector<std::string>{"ein", "Haus", ".", "Katze", "\xEF\xBF\xBD"});
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::istringstream in(text);
  moe::InputLines input(in, "-");
  std::vector<std::string> chunk;
  size_t lines = 0;
  while (input.next_chunk(3, chunk)) {
    FUZZ_REQUIRE(chunk.size() <= 3, "a chunk larger than asked for");
    for (const auto& line : chunk) {
      FUZZ_REQUIRE(moe::data::is_valid_utf8(line) && line.find('\n') == std::string::npos,
                   "a line with '\\n' or bad UTF-8");
      for (int32_t id : vocab.encode(line)) FUZZ_REQUIRE(id >= 0 && id < vocab.size(), "an id outside the vocabulary");
    }
    lines += chunk.size();
  }
  size_t expected = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  if (!text.empty() && text.back() != '\n') ++expected;
  FUZZ_REQUIRE(lines == expected && static_cast<int64_t>(lines) == input.lines(), "input lines were lost or added");
  FUZZ_REQUIRE(input.invalid_utf8() == 0 || !input.warning().empty(), "invalid UTF-8 without a warning");
  return 0;
}
