// The decoding options on a CLI11 command line, generated from their one declaration
// (models/decoding_options.h): each key of the table becomes a flag (`max_len_a` -> --max-len-a) with the
// table's help and check, the struct's value as its shown default, and its value parsed once into the
// struct at parse time; a bad value is a parse error naming the flag ("--beam must be > 0, got 0"). A bool
// key is a switch without a value (--sampling).
// moe-translate, moe-score and moe-serve take their decoding flags from here and only from here.
// Covered by tests/translator/decoding_options_test.cpp.
#pragma once
#include <string>
#include <vector>

#include "models/decoding_options.h"

namespace CLI {
class App;
}  // namespace CLI

namespace moe::cli {

/// Adds the flags of `keys` (names of decoding_keys(); empty = every key) to `app`, bound to `o`.
void add_decoding_options(CLI::App& app, DecodingOptions& o, const std::vector<std::string>& keys = {});

/// How the errors of these flags name them (check_decoding_options, decoding_placement).
inline KeyNaming flag_naming() { return {.section = "", .flags = true}; }

}  // namespace moe::cli
