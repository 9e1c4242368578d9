// translate_text.h implementation. Covered by tests/translator/translate_cli_test.cpp.
#include "translator/translate_text.h"

#include <cmath>
#include <sstream>

namespace moe {

int64_t count_words(const std::string& line) {
  int64_t n = 0;
  bool in_word = false;
  for (char ch : line) {
    const bool space = ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

namespace {
/// Decoded text on one line: a stray line break from a vocabulary piece must not add output lines.
std::string one_line(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}
}  // namespace

std::string format_score(double score, int decimals) {
  if (std::isinf(score)) return score < 0 ? "-inf" : "inf";
  std::ostringstream os;
  os.precision(decimals);
  os << std::fixed << score;
  return os.str();
}

std::string format_word_scores(const std::vector<float>& scores) {
  std::string out;
  for (float x : scores) {
    if (!out.empty()) out += ' ';
    out += format_score(x, 4);
  }
  return out;
}

std::vector<int32_t> encode_source_line(const Translator& translator, const data::Vocab& src_vocab,
                                        const std::string& line, bool& truncated) {
  std::vector<int32_t> ids = src_vocab.encode(line);
  const int64_t limit = translator.max_source_tokens();
  truncated = static_cast<int64_t>(ids.size()) > limit;
  if (truncated) ids.resize(static_cast<size_t>(limit));
  return ids;
}

std::string hypothesis_text(const data::Vocab& tgt_vocab, const Hypothesis& hyp) {
  return one_line(tgt_vocab.decode(hyp.tokens));
}

std::vector<std::string> translate_lines(const Translator& translator, const data::Vocab& src_vocab,
                                         const data::Vocab& tgt_vocab, const std::vector<std::string>& lines,
                                         int n_best, int64_t first_index, TranslateStats& stats,
                                         const std::function<void(int64_t sentences, int64_t target_tokens)>& on_batch,
                                         const std::vector<std::string>& prefixes, const OutputFields& fields) {
  MOE_CHECK(n_best >= 1, "translate: n-best must be at least 1, got ", n_best);
  MOE_CHECK(prefixes.empty() || prefixes.size() == lines.size(), "translate: ", prefixes.size(), " prefix lines for ",
            lines.size(), " input lines");
  TargetPrefixes forced;
  for (const std::string& p : prefixes) forced.push_back(tgt_vocab.encode(p));
  std::vector<std::vector<int32_t>> sources(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    stats.src_words += count_words(lines[i]);
    bool truncated = false;
    sources[i] = encode_source_line(translator, src_vocab, lines[i], truncated);
    stats.truncated += truncated;
    stats.src_tokens += static_cast<int64_t>(sources[i].size());
    if (sources[i].empty()) ++stats.empty_lines;
  }
  stats.lines += static_cast<int64_t>(lines.size());
  const auto results = translator.translate(sources, on_batch, forced);
  std::vector<std::string> out;
  out.reserve(lines.size() * static_cast<size_t>(n_best));
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!results[i].empty()) stats.tgt_tokens += static_cast<int64_t>(results[i][0].tokens.size());
    // an empty input's empty output is certain (score 0)
    const bool words = fields.alignment && fields.alignment->words;
    append_output_lines(out, results[i], n_best, first_index + static_cast<int64_t>(i), tgt_vocab, sources[i].empty(),
                        fields, words ? token_words(src_vocab, sources[i]) : std::vector<int32_t>());
  }
  return out;
}

void append_output_lines(std::vector<std::string>& out, const std::vector<Hypothesis>& hyps, int n_best, int64_t index,
                         const data::Vocab& vocab, bool certain_empty, const OutputFields& fields,
                         const std::vector<int32_t>& source_words) {
  // The fields of hypothesis h, each after `separator` (empty for a missing hypothesis).
  auto fields_of = [&](size_t h, const char* separator) {
    std::string text;
    const Hypothesis* hyp = h < hyps.size() ? &hyps[h] : nullptr;
    if (const auto& alignment = fields.alignment) {
      const TokenWords words{source_words,
                             hyp && alignment->words ? token_words(vocab, hyp->tokens) : std::vector<int32_t>()};
      text += separator + (hyp ? format_alignment(hyp->alignment, *alignment, words) : std::string());
    }
    if (fields.word_scores) text += separator + (hyp ? format_word_scores(hyp->token_scores) : std::string());
    return text;
  };
  if (n_best == 1) {
    out.push_back((hyps.empty() ? std::string() : hypothesis_text(vocab, hyps[0])) + fields_of(0, " ||| "));
    return;
  }
  const std::string number = std::to_string(index);
  for (int h = 0; h < n_best; ++h) {
    if (h < static_cast<int>(hyps.size()))
      out.push_back(number + "\t" + format_score(hyps[h].score) + "\t" + hypothesis_text(vocab, hyps[h]) +
                    fields_of(static_cast<size_t>(h), "\t"));
    else  // fewer hypotheses than asked for
      out.push_back(number + "\t" + format_score(certain_empty && h == 0 ? 0.0 : -INFINITY) + "\t" +
                    fields_of(static_cast<size_t>(h), "\t"));
  }
}

}  // namespace moe
