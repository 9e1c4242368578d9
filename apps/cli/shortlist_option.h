// The --shortlist option, one definition for moe-translate and moe-serve: FILE [FIRST [BEST [THRESHOLD]]], a
// lexical table (moe-vocab lex, Marian's lex.s2t) and how much of it a batch's list takes (translator/shortlist.h),
// parsed once here; load_shortlist reads the table against a model's vocabularies. Covered by
// tests/translator/translate_cli_test.cpp and tests/serving/worker_test.cpp.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "translator/shortlist.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace moe::cli {

struct ShortlistSpec {
  std::string path;
  ShortlistOptions options;
};

/// The values of --shortlist (1 to 4); an error naming the option for a bad count or number.
ShortlistSpec parse_shortlist_spec(const std::vector<std::string>& values);

/// Adds --shortlist to `app`, parsed into `spec`; `scope` ends its description (which models it applies to).
CLI::Option* add_shortlist_option(CLI::App& app, std::optional<ShortlistSpec>& spec, const std::string& scope = "");

/// The shortlist of `spec` over a model's vocabularies; `summary` gets "'FILE': N pairs (K skipped: ...); first F,
/// best B, threshold T" for the program's log.
std::unique_ptr<Shortlist> load_shortlist(const ShortlistSpec& spec, const data::Vocab& src, const data::Vocab& tgt,
                                          std::string& summary);

}  // namespace moe::cli
