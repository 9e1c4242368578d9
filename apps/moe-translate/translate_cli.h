// The moe-translate command line: `moe-translate -m CHECKPOINT [-i IN] [-o OUT]` plus the search,
// batching and device options; `-m A -m B [--weights 0.5,0.5]` decodes an ensemble and `--lm LM --lm-weight W`
// fuses a language model into the search (translator/translation_models.h). Reads raw text (stdin by default), writes
// detokenised text (stdout by default) one line per input line, in input order, in chunks so that long inputs stream;
// shows progress on stderr while it runs (common/progress_meter.h) and reports lines, words/s and tokens/s (and
// truncated lines) there at the end. --prefix FILE forces the beginning of each output (translator/target_prefix.h),
// read line by line beside the input. The search, batching and device flags are the shared decoding options
// (models/decoding_options.h, cli/decoding_options.h). --shortlist FILE [FIRST [BEST [THRESHOLD]]] restricts each
// batch's output vocabulary (translator/shortlist.h), as Marian's does;
// --alignment hard|soft|THRESHOLD adds each output's word alignment (translator/alignment.h), --word-scores its
// tokens' log-probs (translator/translate_text.h).
// Covered by tests/translator/translate_cli_test.cpp.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "cli/shortlist_option.h"
#include "layers/build_context.h"
#include "models/decoding_options.h"
#include "models/int8_model.h"
#include "translator/alignment.h"
#include "translator/translation_models.h"

namespace CLI {
class App;
}  // namespace CLI

namespace moe {

struct TranslateCliOptions {
  std::vector<std::string> models;  // -m, once per model: two or more decode as an ensemble
  std::vector<double> weights;      // --weights, one per model (empty = equal)
  LmFusion lm;                      // --lm, --lm-weight: a language model fused in
  std::string input = "-", output = "-";
  std::string prefix;  // --prefix FILE: one target prefix per input line ("" = none)
  std::optional<cli::ShortlistSpec> shortlist;  // --shortlist
  std::optional<AlignmentOutput> alignment;     // --alignment: write each output's word alignment
  bool word_scores = false;                     // --word-scores: write each output token's log-prob
  DecodingOptions decoding;     // --beam, --n-best, ..., --max-tokens, --device, --dtype
  int64_t chunk_lines = 10000;  // input lines read, sorted and translated at a time
  Quantize quantize = Quantize::none;                  // int8: CPU int8 inference (models/int8_model.h)
  ExpertChoice mae_inference = ExpertChoice::mixture;  // MAE models: mixture | argmax (the most-weighted expert)
  bool quiet = false;                                  // no summary or progress on stderr
  double log_every = 30;                               // seconds between progress lines off a terminal (0 = none)
};

/// Runs a translation job; results go to options.output (or `out` when it is "-"), the summary and
/// warnings to `err`. Errors are thrown as moe::Error.
void run_translate(const TranslateCliOptions& options, std::istream& in, std::ostream& out, std::ostream& err);

/// Adds every option of moe-translate to `app`, bound to `o`.
void add_translate_options(CLI::App& app, TranslateCliOptions& o);

/// main() of moe-translate: parses argv, runs, prints errors as "moe-translate: error: ...".
int translate_main(int argc, char** argv);

}  // namespace moe
