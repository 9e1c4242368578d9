// Tokenizer registry (13a, intl, char, zh, none), the char and none tokenizers, and compound splitting.
// char: " ".join(line) over code points (sacreBLEU's TokenizerChar); none: the line unchanged.
// compound_split: perl s{(\S)-(\S)}{$1 ##AT##-##AT## $2}g. Covered by tests/metrics/tokenizer_test.cpp.
#include "metrics/tokenizer.h"

#include "common/error.h"
#include "metrics/text.h"

namespace moe::metrics {

std::string tokenize_char(std::string_view line) {
  std::u32string u = utf8_decode(line);
  std::u32string out;
  out.reserve(u.size() * 2);
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (i) out.push_back(U' ');
    out.push_back(u[i]);
  }
  return utf8_encode(out);
}

std::string tokenize_none(std::string_view line) { return std::string(line); }

std::vector<std::string> tokenizer_names() { return {"13a", "intl", "char", "zh", "none"}; }

Tokenizer make_tokenizer(const std::string& name) {
  if (name == "13a") return tokenize_13a;
  if (name == "intl") return tokenize_intl;
  if (name == "char") return tokenize_char;
  if (name == "none") return tokenize_none;
  if (name == "zh") return tokenize_zh;
  std::string known;
  for (const auto& n : tokenizer_names()) known += (known.empty() ? "" : ", ") + n;
  MOE_FAIL("bleu: unknown tokenizer '", name, "' (known: ", known, ")");
}

std::string compound_split(std::string_view line) {
  // perl's \s without a utf8 flag: ASCII whitespace; every other byte is \S.
  auto non_space = [](char c) {
    return !(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v');
  };
  std::string out;
  out.reserve(line.size() + 16);
  std::size_t i = 0;
  while (i < line.size()) {
    if (i + 2 < line.size() && non_space(line[i]) && line[i + 1] == '-' && non_space(line[i + 2])) {
      out.push_back(line[i]);
      out += " ##AT##-##AT## ";
      out.push_back(line[i + 2]);
      i += 3;
    } else {
      out.push_back(line[i++]);
    }
  }
  return out;
}

}  // namespace moe::metrics
