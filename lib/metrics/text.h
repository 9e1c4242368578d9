// Text helpers shared by the metrics, matching the Python 3 string semantics sacreBLEU relies on:
// UTF-8 <-> code points, str.isspace(), str.split() with no argument, str.rstrip(), str.lower()
// (simple case mapping). Covered by tests/metrics/tokenizer_test.cpp.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace moe::metrics {

/// UTF-8 to code points; an invalid byte becomes U+FFFD (Python would refuse to decode).
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);

/// Python's str.isspace(): ASCII whitespace, U+001C..U+001F, U+0085, U+00A0, U+1680,
/// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_py_space(char32_t c);

/// Python's str.split() (no separator): runs of whitespace separate, no empty fields.
std::vector<std::string> py_split(std::string_view s);
std::vector<std::u32string> py_split(std::u32string_view s);
/// ' '.join(s.split()).
std::string py_normalize_space(std::string_view s);
/// Python's str.rstrip() (no argument).
std::string py_rstrip(std::string_view s);
/// Python's str.lower(): per-code-point towlower in C.UTF-8 (matched Python 3 on every code point
/// when written), U+0130 -> "i\u0307", and Greek capital sigma -> final sigma at a word end.
std::string py_lower(std::string_view s);

}  // namespace moe::metrics
