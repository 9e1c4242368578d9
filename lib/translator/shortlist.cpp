// shortlist.h implementation. Covered by tests/translator/shortlist_test.cpp.
#include "translator/shortlist.h"

#include <algorithm>

#include "common/error.h"

namespace moe {

BatchShortlist::BatchShortlist(std::vector<int32_t> ids) : ids_(std::move(ids)) {
  MOE_CHECK(!ids_.empty() && std::is_sorted(ids_.begin(), ids_.end()) &&
                std::adjacent_find(ids_.begin(), ids_.end()) == ids_.end(),
            "shortlist: the target ids must be ascending and distinct (", ids_.size(), " given)");
}

int32_t BatchShortlist::column(int32_t id) const {
  const auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
  MOE_CHECK(it != ids_.end() && *it == id, "shortlist: target id ", id, " is not in the batch's list");
  return static_cast<int32_t>(it - ids_.begin());
}

BeamOptions BatchShortlist::to_columns(BeamOptions o) const {
  o.pad_id = column(o.pad_id);
  o.bos_id = column(o.bos_id);
  o.eos_id = column(o.eos_id);
  if (o.unk_id >= 0) o.unk_id = column(o.unk_id);
  return o;
}

TargetPrefixes BatchShortlist::to_columns(const TargetPrefixes& prefixes) const {
  TargetPrefixes out = prefixes;
  for (auto& prefix : out)
    for (int32_t& token : prefix) token = column(token);
  return out;
}

void BatchShortlist::to_ids(std::vector<int32_t>& columns) const {
  for (int32_t& c : columns) {
    MOE_CHECK(c >= 0 && static_cast<size_t>(c) < ids_.size(), "shortlist: column ", c, " is outside the list of ",
              ids_.size());
    c = ids_[static_cast<size_t>(c)];
  }
}

Shortlist::Shortlist(const data::LexicalTable& table, int32_t target_vocab, ShortlistOptions o)
    : vocab_(target_vocab), o_(o) {
  MOE_CHECK(o_.first >= 0, "shortlist: 'first' must be >= 0, got ", o_.first);
  MOE_CHECK(o_.best >= 0, "shortlist: 'best' must be >= 0, got ", o_.best);
  MOE_CHECK(o_.threshold >= 0 && o_.threshold <= 1, "shortlist: the threshold must be in [0, 1], got ", o_.threshold);
  int32_t sources = 0;
  for (const data::LexicalEntry& e : table.entries) {
    MOE_CHECK(e.target >= 0 && e.target < vocab_, "shortlist: target id ", e.target, " is outside the vocabulary of ",
              vocab_);
    MOE_CHECK(e.source >= 0, "shortlist: negative source id ", e.source);
    sources = std::max(sources, e.source + 1);
  }
  // The table is sorted by source, then probability descending: each source's first `best` entries above the
  // threshold are its translations.
  begin_.assign(static_cast<size_t>(sources) + 1, 0);
  size_t i = 0;
  for (int32_t s = 0; s < sources; ++s) {
    begin_[s] = static_cast<int64_t>(translations_.size());
    int64_t kept = 0;
    for (; i < table.entries.size() && table.entries[i].source == s; ++i)
      if (kept < o_.best && table.entries[i].prob >= o_.threshold) {
        translations_.push_back(table.entries[i].target);
        ++kept;
      }
  }
  begin_[sources] = static_cast<int64_t>(translations_.size());
  MOE_CHECK(i == table.entries.size(), "shortlist: the lexical table is not sorted by source id");
}

BatchShortlist Shortlist::batch(const std::vector<const std::vector<int32_t>*>& sources, const TargetPrefixes& prefixes,
                                const std::vector<int32_t>& specials) const {
  std::vector<uint8_t> in(static_cast<size_t>(vocab_), 0);
  for (int64_t id = 0; id < std::min<int64_t>(o_.first, vocab_); ++id) in[id] = 1;
  auto add = [&](int32_t id) {
    MOE_CHECK(id >= 0 && id < vocab_, "shortlist: target id ", id, " is outside the vocabulary of ", vocab_);
    in[id] = 1;
  };
  for (int32_t id : specials) add(id);
  for (const auto& prefix : prefixes)
    for (int32_t id : prefix) add(id);
  const int64_t sources_known = static_cast<int64_t>(begin_.size()) - 1;
  for (const std::vector<int32_t>* source : sources)
    for (int32_t s : *source)
      if (s >= 0 && s < sources_known)
        for (int64_t j = begin_[s]; j < begin_[s + 1]; ++j) in[translations_[j]] = 1;
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < vocab_; ++id)
    if (in[id]) ids.push_back(id);
  ++lists_;
  widths_ += static_cast<int64_t>(ids.size());
  return BatchShortlist(std::move(ids));
}

}  // namespace moe
