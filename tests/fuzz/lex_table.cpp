// Fuzzes lexical tables (lib/data/lexical_table.cpp: "target source probability" lines, plain or gzip), as
// moe-translate --shortlist and moe-serve --shortlist read them, and the shortlists built from them
// (lib/translator/shortlist.cpp). Invariants: a bad table is a moe::Error naming the file; an accepted one holds
// ids inside the vocabulary and probabilities in [0, 1], sorted by source then probability; its shortlist's batch
// list over every source id is ascending, holds the specials and maps every id to its column and back. Seeds:
// tests/fuzz/seeds/lex_table.
#include <algorithm>

#include "data/lexical_table.h"
#include "fuzz_support.h"
#include "translator/shortlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const moe::data::WordVocab words({"a", "b", "c", "x", "y", "z", "NULL"});
  const std::string path =
      moe::fuzz::write_file("lex.s2t", std::string_view(reinterpret_cast<const char*>(data), size));
  moe::data::LexicalTable table;
  int64_t skipped = 0;
  if (!moe::fuzz::accepts([&] { table = moe::data::read_lexical_table(path, words, words, &skipped); }, path)) return 0;
  FUZZ_REQUIRE(skipped >= 0, "a negative count of skipped pairs");
  for (size_t i = 0; i < table.entries.size(); ++i) {
    const moe::data::LexicalEntry& e = table.entries[i];
    FUZZ_REQUIRE(e.source >= 0 && e.source < words.size() && e.target >= 0 && e.target < words.size(),
                 "an id outside the vocabulary");
    FUZZ_REQUIRE(e.prob >= 0 && e.prob <= 1, "a probability outside [0, 1]");
    if (i > 0) {
      const moe::data::LexicalEntry& p = table.entries[i - 1];
      FUZZ_REQUIRE(p.source < e.source || (p.source == e.source && p.prob >= e.prob), "entries out of order");
    }
  }
  const moe::Shortlist shortlist(table, words.size(), {.first = 2, .best = 2, .threshold = 0.1});
  std::vector<int32_t> all(static_cast<size_t>(words.size()));
  for (int32_t id = 0; id < words.size(); ++id) all[id] = id;
  const moe::BatchShortlist list = shortlist.batch({&all}, {}, {0, 1, 2, 3});
  const std::vector<int32_t>& ids = list.ids();
  FUZZ_REQUIRE(std::is_sorted(ids.begin(), ids.end()) && std::adjacent_find(ids.begin(), ids.end()) == ids.end(),
               "a list that is not ascending");
  for (int32_t special : {0, 1, 2, 3})
    FUZZ_REQUIRE(std::binary_search(ids.begin(), ids.end(), special), "a special id missing from the list");
  std::vector<int32_t> back;
  for (int32_t id : ids) back.push_back(list.column(id));
  list.to_ids(back);
  FUZZ_REQUIRE(back == ids, "ids do not map to their columns and back");
  return 0;
}
