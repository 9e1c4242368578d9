// sacreBLEU's zh tokenizer: line.strip(), then every code point in its "Chinese" ranges is
// surrounded by spaces, then the 13a regular expressions (tokenize_regexp). The ranges are
// sacreBLEU's _UCODE_RANGES as Python actually evaluates them: its entries '\u20000'..'\u2a6d6' and
// '\u2f800'..'\u2fa1d' are two-character strings, so for single characters they act as
// U+2001..U+2A6D and U+2F81..U+2FA1 (a quirk we reproduce). Covered by tests/metrics/tokenizer_test.cpp.
#include "metrics/text.h"
#include "metrics/tokenizer.h"

namespace moe::metrics {
namespace {

struct Range {
  char32_t lo, hi;
};

constexpr Range k_zh_ranges[] = {
    {0x3400, 0x4DB5}, {0x4E00, 0x9FA5}, {0x9FA6, 0x9FBB}, {0xF900, 0xFA2D}, {0xFA30, 0xFA6A},
    {0xFA70, 0xFAD9}, {0x2001, 0x2A6D}, {0x2F81, 0x2FA1}, {0xFF00, 0xFFEF}, {0x2E80, 0x2EFF},
    {0x3000, 0x303F}, {0x31C0, 0x31EF}, {0x2F00, 0x2FDF}, {0x2FF0, 0x2FFF}, {0x3100, 0x312F},
    {0x31A0, 0x31BF}, {0xFE10, 0xFE1F}, {0xFE30, 0xFE4F}, {0x2600, 0x26FF}, {0x2700, 0x27BF},
    {0x3200, 0x32FF}, {0x3300, 0x33FF}};

bool is_zh_char(char32_t c) {
  for (const Range& r : k_zh_ranges)
    if (c >= r.lo && c <= r.hi) return true;
  return false;
}

}  // namespace

std::string tokenize_zh(std::string_view line) {
  std::u32string u = utf8_decode(line);
  std::size_t b = 0, e = u.size();
  while (b < e && is_py_space(u[b])) ++b;
  while (e > b && is_py_space(u[e - 1])) --e;
  std::u32string out;
  out.reserve((e - b) * 2);
  for (std::size_t i = b; i < e; ++i) {
    if (is_zh_char(u[i])) {
      out.push_back(U' ');
      out.push_back(u[i]);
      out.push_back(U' ');
    } else {
      out.push_back(u[i]);
    }
  }
  return tokenize_regexp(utf8_encode(out));
}

}  // namespace moe::metrics
