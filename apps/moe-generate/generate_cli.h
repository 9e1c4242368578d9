// The moe-generate command line: `moe-generate -m CHECKPOINT [-i PROMPTS] [-o OUT]` plus the shared search,
// sampling, batching and device options (models/decoding_options.h). Each input line is a prompt (an empty line:
// a sentence from its start), encoded with the language model's vocabulary; each output line is its continuation,
// decoded, one line per input line in order (with --n-best > 1, n-best lines "index \t score \t text"), by greedy
// or beam search or, with --sampling, by sampling (translator/lm_generation.h). --max-len-b bounds the new tokens.
// --word-scores adds each new token's log-prob, as moe-translate's (translator/translate_text.h).
// Progress on stderr while it runs; a stop signal ends it after the batch in flight with complete lines only
// (exit status 75). Covered by tests/translator/generate_cli_test.cpp.
#pragma once
#include <iosfwd>
#include <string>

#include "models/decoding_options.h"

namespace CLI {
class App;
}  // namespace CLI

namespace moe {

struct GenerateCliOptions {
  std::string model;  // -m: a causal language model's checkpoint
  std::string input = "-", output = "-";
  DecodingOptions decoding;     // --beam, --sampling, --max-len-b, ..., --max-tokens, --device, --dtype
  int64_t chunk_lines = 10000;  // prompts read and generated at a time
  bool word_scores = false;     // --word-scores: each new token's log-prob after the text
  bool quiet = false;           // no summary or progress on stderr
  double log_every = 30;        // seconds between progress lines off a terminal (0 = none)
};

/// Runs a generation job; continuations go to options.output (or `out` when it is "-"), the summary to `err`.
/// Errors are thrown as moe::Error.
void run_generate(const GenerateCliOptions& o, std::istream& in, std::ostream& out, std::ostream& err);
void add_generate_options(CLI::App& app, GenerateCliOptions& o);
int generate_main(int argc, char** argv);

}  // namespace moe
