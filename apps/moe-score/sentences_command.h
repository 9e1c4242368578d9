// moe-score sentences -m LM -i TEXT: the log-probability of each line as a sentence of a causal language model,
//   log P(line) = sum_t log p(y_t | </s> y_<t)   (t over the line's tokens and its </s>),
// each line scored from its start, independently of the others (moe-score ppl reads the lines as one running
// text instead): one "log_prob<TAB>tokens" line per input line (tokens with </s>), --word-scores adding each
// token's log-prob, and the summary on stderr (--summary: alone, on stdout). What n-best reranking, data
// selection by cross-entropy (Moore and Lewis) and fluency filters read, as Marian's scorer gives for its
// language models. Decoded step by step (translator/stepwise_scores.h) in --max-tokens batches.
// Covered by tests/translator/sentence_scores_test.cpp.
#pragma once
#include "cli/subcommand_table.h"

namespace moe {

cli::SubcommandRunner setup_sentences(CLI::App& sub);

}  // namespace moe
