// The intl tokenizer (sacreBLEU's TokenizerV14International, i.e. mteval-v14.pl --international),
// on code points with Python's re.sub left-to-right non-overlapping semantics:
//   (\P{N})(\p{P}) -> "\1 \2 ";  (\p{P})(\P{N}) -> " \1 \2";  (\p{S}) -> " \1 ";  ' '.join(split()).
// Categories come from unicode_tables.cpp. Covered by tests/metrics/tokenizer_test.cpp.
#include "metrics/text.h"
#include "metrics/tokenizer.h"
#include "metrics/unicode_tables.h"

namespace moe::metrics {
namespace {

template <class A, class B>
std::u32string sub_pairs(const std::u32string& s, A first, B second, bool space_before) {
  std::u32string out;
  out.reserve(s.size() + s.size() / 4);
  std::size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      if (space_before) out.push_back(U' ');
      out.push_back(s[i]);
      out.push_back(U' ');
      out.push_back(s[i + 1]);
      if (!space_before) out.push_back(U' ');
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

}  // namespace

std::string tokenize_intl(std::string_view line) {
  std::u32string s = utf8_decode(line);
  auto not_number = [](char32_t c) { return !is_unicode_number(c); };
  s = sub_pairs(s, not_number, is_unicode_punct, false);
  s = sub_pairs(s, is_unicode_punct, not_number, true);
  std::u32string out;
  out.reserve(s.size() + 8);
  for (char32_t c : s) {
    if (is_unicode_symbol(c)) {
      out.push_back(U' ');
      out.push_back(c);
      out.push_back(U' ');
    } else {
      out.push_back(c);
    }
  }
  std::u32string joined;
  for (const auto& w : py_split(std::u32string_view(out))) {
    if (!joined.empty()) joined.push_back(U' ');
    joined += w;
  }
  return utf8_encode(joined);
}

}  // namespace moe::metrics
