// shortlist_option.h implementation. Covered by tests/translator/translate_cli_test.cpp and
// tests/serving/worker_test.cpp.
#include "cli/shortlist_option.h"

#include <CLI/CLI.hpp>
#include <sstream>

#include "common/error.h"

namespace moe::cli {

ShortlistSpec parse_shortlist_spec(const std::vector<std::string>& v) {
  MOE_CHECK(!v.empty() && v.size() <= 4, "--shortlist takes FILE [FIRST [BEST [THRESHOLD]]], got ", v.size(),
            " values");
  ShortlistSpec spec{v[0], {}};
  auto number = [&](size_t i, const char* what, auto& field) {
    if (i >= v.size()) return;
    std::istringstream in(v[i]);
    const bool ok = static_cast<bool>(in >> field) && (in >> std::ws).eof() && field >= 0;
    MOE_CHECK(ok, "--shortlist: ", what, " must be a number >= 0, got '", v[i], "'");
  };
  number(1, "FIRST (the first target ids always kept)", spec.options.first);
  number(2, "BEST (translations per source token)", spec.options.best);
  number(3, "THRESHOLD (the least p(target|source))", spec.options.threshold);
  MOE_CHECK(spec.options.threshold <= 1, "--shortlist: THRESHOLD must be at most 1, got ", spec.options.threshold);
  return spec;
}

CLI::Option* add_shortlist_option(CLI::App& app, std::optional<ShortlistSpec>& spec, const std::string& scope) {
  return app
      .add_option_function<std::vector<std::string>>(
          "--shortlist",
          [&spec](const std::vector<std::string>& v) {
            try {
              spec = parse_shortlist_spec(v);
            } catch (const Error& e) {
              throw CLI::ValidationError(e.what());
            }
          },
          "FILE [FIRST [BEST [THRESHOLD]]]: score only the first FIRST target ids (default 100) and each source "
          "token's BEST (100) most probable translations with p >= THRESHOLD (0) of the lexical table FILE "
          "('target source p' lines: moe-vocab lex, Marian's lex.s2t), the union over a batch; probabilities are "
          "normalised over the list" +
              scope)
      ->expected(1, 4);
}

std::unique_ptr<Shortlist> load_shortlist(const ShortlistSpec& spec, const data::Vocab& src, const data::Vocab& tgt,
                                          std::string& summary) {
  int64_t skipped = 0;
  const data::LexicalTable table = data::read_lexical_table(spec.path, src, tgt, &skipped);
  const ShortlistOptions& o = spec.options;
  summary = detail::concat("'", spec.path, "': ", table.entries.size(), " pairs (", skipped,
                           " skipped: pieces not in the model's vocabularies); first ", o.first, ", best ", o.best,
                           ", threshold ", o.threshold);
  return std::make_unique<Shortlist>(table, tgt.size(), o);
}

}  // namespace moe::cli
