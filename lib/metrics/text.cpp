// Python-compatible text helpers (UTF-8, whitespace, split, lower) for BLEU and chrF.
// Decoding follows RFC 3629; whitespace follows Python's str.isspace(); lower() uses glibc's
// towlower_l in C.UTF-8 plus Python's two special cases (U+0130, final sigma). Covered by tests/metrics/tokenizer_test.cpp.
#include "metrics/text.h"

#include <locale.h>
#include <wctype.h>

namespace moe::metrics {

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len != 0 && i + len <= s.size();
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; ok && k < len; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

bool is_py_space(char32_t c) {
  if (c <= 0x7F) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::vector<std::u32string> py_split(std::u32string_view s) {
  std::vector<std::u32string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_py_space(s[i])) ++i;
    std::size_t j = i;
    while (j < s.size() && !is_py_space(s[j])) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

namespace {
bool has_non_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return true;
  return false;
}
// Approximations of Unicode's Case_Ignorable and Cased properties, enough for Python's Final_Sigma
// rule in str.lower(): combining marks, apostrophes, periods, colons, middle dot, soft hyphen.
bool is_case_ignorable(char32_t c) {
  return (c >= 0x300 && c <= 0x36F) || c == '\'' || c == '.' || c == ':' || c == 0xB7 || c == 0xAD ||
         c == 0x2019 || c == 0x2018 || c == 0x387;
}

bool is_cased(char32_t c, locale_t loc) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  return loc && (iswupper_l(static_cast<wint_t>(c), loc) || iswlower_l(static_cast<wint_t>(c), loc));
}

// Python's final-sigma test: a cased letter before (skipping case-ignorables) and none after.
bool is_final_sigma(const std::u32string& u, std::size_t i, locale_t loc) {
  std::size_t j = i;
  while (j > 0 && is_case_ignorable(u[j - 1])) --j;
  if (j == 0 || !is_cased(u[j - 1], loc)) return false;
  std::size_t k = i + 1;
  while (k < u.size() && is_case_ignorable(u[k])) ++k;
  return !(k < u.size() && is_cased(u[k], loc));
}

}  // namespace

std::vector<std::string> py_split(std::string_view s) {
  std::vector<std::string> out;
  if (has_non_ascii(s)) {  // Unicode whitespace (e.g. U+00A0) separates too
    for (const auto& w : py_split(std::u32string_view(utf8_decode(s)))) out.push_back(utf8_encode(w));
    return out;
  }
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_py_space(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !is_py_space(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string py_normalize_space(std::string_view s) {
  std::string out;
  for (const auto& w : py_split(s)) {
    if (!out.empty()) out.push_back(' ');
    out += w;
  }
  return out;
}

std::string py_rstrip(std::string_view s) {
  if (has_non_ascii(s)) {
    std::u32string u = utf8_decode(s);
    while (!u.empty() && is_py_space(u.back())) u.pop_back();
    return utf8_encode(u);
  }
  std::size_t n = s.size();
  while (n > 0 && is_py_space(static_cast<unsigned char>(s[n - 1]))) --n;
  return std::string(s.substr(0, n));
}

std::string py_lower(std::string_view s) {
  if (!has_non_ascii(s)) {
    std::string out(s);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return out;
  }
  static locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  const std::u32string u = utf8_decode(s);
  std::u32string out;
  for (std::size_t i = 0; i < u.size(); ++i) {
    const char32_t c = u[i];
    if (c == 0x3A3 && is_final_sigma(u, i, loc)) {  // GREEK CAPITAL SIGMA at a word end -> final sigma
      out.push_back(0x3C2);
    } else if (c == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE: Python gives "i\u0307"
      out.push_back('i');
      out.push_back(0x307);
    } else if (c < 0x80) {
      out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else {
      out.push_back(loc ? static_cast<char32_t>(towlower_l(static_cast<wint_t>(c), loc)) : c);
    }
  }
  return utf8_encode(out);
}

}  // namespace moe::metrics
