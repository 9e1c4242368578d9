// The 13a tokenizer (sacreBLEU's Tokenizer13a + TokenizerRegexp, i.e. mteval-v13a.pl), emulating
// Python's re.sub left-to-right non-overlapping semantics byte by byte (the patterns only name
// ASCII characters, so bytes and code points give the same result):
//   ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 ";  ([^0-9])([\.,]) -> "\1 \2 ";
//   ([\.,])([^0-9]) -> " \1 \2";  ([0-9])(-) -> "\1 \2 ";  then ' '.join(split()).
// tokenize_regexp (those four rules + space normalisation) is shared with the zh tokenizer.
// Covered by tests/metrics/tokenizer_test.cpp.
#include "metrics/text.h"
#include "metrics/tokenizer.h"

namespace moe::metrics {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (s.find(from) == std::string::npos) return;
  std::string out;
  out.reserve(s.size());
  std::size_t pos = 0;
  for (std::size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_dot_comma(char c) { return c == '.' || c == ','; }

// The character class of the first 13a pattern: ASCII punctuation except ' , - . (and the space).
bool is_13a_punct(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return (u >= 0x7B && u <= 0x7E) || (u >= 0x5B && u <= 0x60) || (u >= 0x20 && u <= 0x26) ||
         (u >= 0x28 && u <= 0x2B) || (u >= 0x3A && u <= 0x40) || u == '/';
}

// re.sub(r'(A)(B)', repl) scanning left to right; `space_before`/`space_after` describe the
// replacement "\1 \2 " (after=true) or " \1 \2" (before=true).
template <class A, class B>
std::string sub_pairs(const std::string& s, A first, B second, bool space_before) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  std::size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      if (space_before) out.push_back(' ');
      out.push_back(s[i]);
      out.push_back(' ');
      out.push_back(s[i + 1]);
      if (!space_before) out.push_back(' ');
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

}  // namespace

std::string tokenize_13a(std::string_view input) {
  std::string line(input);
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  replace_all(line, "&quot;", "\"");
  replace_all(line, "&amp;", "&");
  replace_all(line, "&lt;", "<");
  replace_all(line, "&gt;", ">");

  return tokenize_regexp(" " + line + " ");
}

std::string tokenize_regexp(const std::string& line) {
  std::string s;
  s.reserve(line.size() * 2);
  for (char c : line) {
    if (is_13a_punct(c)) {
      s.push_back(' ');
      s.push_back(c);
      s.push_back(' ');
    } else {
      s.push_back(c);
    }
  }
  auto not_digit = [](char c) { return !is_digit(c); };
  s = sub_pairs(s, not_digit, is_dot_comma, false);
  s = sub_pairs(s, is_dot_comma, not_digit, true);
  s = sub_pairs(s, is_digit, [](char c) { return c == '-'; }, false);
  return py_normalize_space(s);
}

}  // namespace moe::metrics
