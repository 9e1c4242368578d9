// Text in, text out: encodes raw lines with the source vocabulary, truncates over-long ones to the
// model's positions (counted, never dropped), translates them (Translator) and decodes the best
// hypotheses with the target vocabulary. Exactly one output line per input line (an empty line for
// an empty input line); with n_best > 1 exactly n_best lines "index \t score \t text" per input line
// (fairseq-like: index = 0-based input line, score = length-normalised log-prob, natural log). Asked-for fields
// (OutputFields) follow the text, each after " ||| " as Marian writes an alignment, or with n_best > 1 as a further
// tab-separated field, in this order: the word alignment (translator/alignment.h), then the word scores (each
// token's log-prob and </s>'s, 4 decimals as fairseq's positional scores: "text ||| -0.1234 -0.0567 ...").
// Covered by tests/translator/translate_cli_test.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "translator/alignment.h"
#include "translator/translator.h"

namespace moe {

struct TranslateStats {
  int64_t lines = 0, empty_lines = 0;
  int64_t src_words = 0;                    // whitespace-separated words of the input
  int64_t src_tokens = 0;                   // source subword tokens (after truncation, without </s>)
  int64_t tgt_tokens = 0;                   // target tokens of the best hypotheses (without </s>)
  int64_t truncated = 0;                    // input lines cut to the model's max positions
};

/// What each output carries after its text.
struct OutputFields {
  /// Its word alignment: the translator must have been made with TranslatorOptions::alignment.
  std::optional<AlignmentOutput> alignment;
  /// Its tokens' log-probs (Hypothesis::token_scores): the translator must compute scores (TranslatorOptions::scores).
  bool word_scores = false;
};

/// Translates `lines`; `first_index` numbers the lines in n-best output. Adds to `stats`; `on_batch`
/// as Translator::translate (progress). `prefixes` (none, or one line per input line, encoded with the
/// target vocabulary; an empty line forces nothing) begin the outputs (moe-translate --prefix).
std::vector<std::string> translate_lines(
    const Translator& translator, const data::Vocab& src_vocab, const data::Vocab& tgt_vocab,
    const std::vector<std::string>& lines, int n_best, int64_t first_index, TranslateStats& stats,
    const std::function<void(int64_t sentences, int64_t target_tokens)>& on_batch = {},
    const std::vector<std::string>& prefixes = {}, const OutputFields& fields = {});

/// The source ids of `line` as translate_lines makes them: encoded, cut to the model's positions (then
/// `truncated` is set). moe-serve encodes its requests with it.
std::vector<int32_t> encode_source_line(const Translator& translator, const data::Vocab& src_vocab,
                                        const std::string& line, bool& truncated);
/// The output lines of one input line's hypotheses, as translate_lines writes them: the best text, or with
/// n_best > 1 exactly n_best lines "index \t score \t text" (missing ones with score -inf, or 0 for the first
/// when `certain_empty`: an empty input, whose empty output is certain), with the hypotheses' `fields` (empty
/// ones for a missing hypothesis; links between words with alignment->words, the source's words `source_words`
/// as token_words gives them).
void append_output_lines(std::vector<std::string>& out, const std::vector<Hypothesis>& hyps, int n_best, int64_t index,
                         const data::Vocab& vocab, bool certain_empty = false, const OutputFields& fields = {},
                         const std::vector<int32_t>& source_words = {});
/// The output text of a hypothesis: decoded, on one line.
std::string hypothesis_text(const data::Vocab& tgt_vocab, const Hypothesis& hyp);
/// A score as the n-best lines write it (6 decimals; "-inf" / "inf").
std::string format_score(double score, int decimals = 6);
/// Word scores as the output lines write them: each with 4 decimals, separated by spaces.
std::string format_word_scores(const std::vector<float>& scores);

/// Number of whitespace-separated words in `line`.
int64_t count_words(const std::string& line);

}  // namespace moe
