// BLEU tokenizers, exactly as sacreBLEU 2.x applies them before counting n-grams:
//   13a  (mteval-v13a.pl: unescape &quot; &amp; &lt; &gt;, split ASCII punctuation, split . and ,
//         unless next to a digit, split - after a digit), intl (mteval-v14 international: split
//         Unicode punctuation unless between digits, split symbols), char (every character a token),
//         zh (CJK characters split, then 13a rules), none (whitespace only). Plus the WMT14 En-De compound splitting "a-b" -> "a ##AT##-##AT## b".
// Covered by tests/metrics/tokenizer_test.cpp.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace moe::metrics {

using Tokenizer = std::function<std::string(std::string_view)>;

std::string tokenize_13a(std::string_view line);
std::string tokenize_intl(std::string_view line);
std::string tokenize_char(std::string_view line);
std::string tokenize_none(std::string_view line);
/// sacreBLEU's zh tokenizer: strip, surround every character of its CJK ranges with spaces, then
/// the 13a regular expressions (without 13a's unescaping and padding).
std::string tokenize_zh(std::string_view line);
/// The four regular expressions of 13a (sacreBLEU's TokenizerRegexp) and space normalisation.
std::string tokenize_regexp(const std::string& line);

/// The tokenizer sacreBLEU names `name` ("13a", "intl", "char", "zh", "none"); an unknown name throws
/// a moe::Error listing the known ones.
Tokenizer make_tokenizer(const std::string& name);
std::vector<std::string> tokenizer_names();

/// perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g' (tensor2tensor / fairseq compound splitting):
/// non-overlapping, left to right, so "a-b-c" -> "a ##AT##-##AT## b-c" exactly as perl does.
std::string compound_split(std::string_view line);

}  // namespace moe::metrics
