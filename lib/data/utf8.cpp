// UTF-8 validation (RFC 3629 table 3-7 well-formed byte sequences; an ASCII fast path skips eight
// bytes at a time) and the U+FFFD replacement of the bytes that start no well-formed sequence. Covered by
// tests/data/corpus_test.cpp ("utf8").
#include "data/utf8.h"

#include <cstdint>
#include <cstring>

namespace moe::data {

size_t find_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {  // ASCII fast path
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // no overlong
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // no overlong
      if (c == 0xF4) hi = 0x8F;  // <= U+10FFFF
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (int k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

size_t replace_invalid_utf8(std::string& s) {
  size_t bad = find_invalid_utf8(s);
  if (bad == std::string_view::npos) return 0;
  std::string out;
  out.reserve(s.size() + 8);
  size_t from = 0, replaced = 0;
  while (bad != std::string_view::npos) {
    out.append(s, from, bad - from);
    out += "\xEF\xBF\xBD";
    ++replaced;
    from = bad + 1;
    const size_t next = find_invalid_utf8(std::string_view(s).substr(from));
    bad = next == std::string_view::npos ? next : from + next;
  }
  out.append(s, from, std::string::npos);
  s = std::move(out);
  return replaced;
}

}  // namespace moe::data
