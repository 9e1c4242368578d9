// UTF-8 validation for corpus lines (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
// find_invalid_utf8 returns the byte offset of the first bad sequence or npos; replace_invalid_utf8
// turns every byte that starts no well-formed sequence into U+FFFD (moe-translate's input).
// Covered by tests/data/corpus_test.cpp ("utf8").
#pragma once
#include <string>
#include <string_view>

namespace moe::data {

/// Byte offset of the first invalid UTF-8 sequence in `s`, or std::string_view::npos if valid.
size_t find_invalid_utf8(std::string_view s);
inline bool is_valid_utf8(std::string_view s) { return find_invalid_utf8(s) == std::string_view::npos; }
/// Replaces each byte of `s` that starts no well-formed sequence by U+FFFD (EF BF BD); returns how
/// many bytes were replaced (0: `s` is unchanged).
size_t replace_invalid_utf8(std::string& s);

}  // namespace moe::data
