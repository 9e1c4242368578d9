// aer.h implementation. Covered by tests/metrics/aer_test.cpp.
#include "metrics/aer.h"

#include "common/error.h"
#include "data/corpus.h"

namespace moe::metrics {

namespace {

/// Calls `each(link, kind)` for every blank-separated link of `line`: kind is '-' (sure or plain), or 'p' / '?'
/// (possible), with the link's two positions.
template <class Each>
void for_each_link(std::string_view line, bool one_based, Each each) {
  int64_t n = 0;
  for (const std::string_view field : data::blank_fields(line)) {
    ++n;
    const std::string_view link = field.substr(0, field.find(':'));
    const size_t sep = link.find_first_of("-p?");
    int32_t s = -1, t = -1;
    const int32_t least = one_based ? 1 : 0;
    MOE_CHECK(sep != std::string_view::npos && data::parse_number(link.substr(0, sep), s) &&
                  data::parse_number(link.substr(sep + 1), t) && s >= least && t >= least,
              "link ", n, " '", data::shown(field), "' is not 'source-target' (or 'source?target', 'sourceptarget' ",
              "for a possible link) with positions counted from ", least);
    each(Link{s - least, t - least}, link[sep]);
  }
}

}  // namespace

GoldLinks parse_gold_links(std::string_view line, bool one_based) {
  GoldLinks g;
  for_each_link(line, one_based, [&](const Link& l, char kind) {
    if (kind == '-') g.sure.insert(l);
    g.possible.insert(l);
  });
  return g;
}

std::set<Link> parse_hypothesis_links(std::string_view line, bool one_based) {
  std::set<Link> out;
  for_each_link(line, one_based, [&](const Link& l, char kind) {
    MOE_CHECK(kind == '-', "link ", l.first + (one_based ? 1 : 0), kind, l.second + (one_based ? 1 : 0),
              " is a possible link: a hypothesis has plain 'source-target' links");
    out.insert(l);
  });
  return out;
}

void AerCounts::add(const std::set<Link>& a, const GoldLinks& gold) {
  hypothesis += static_cast<int64_t>(a.size());
  sure += static_cast<int64_t>(gold.sure.size());
  possible += static_cast<int64_t>(gold.possible.size());
  for (const Link& l : a) {
    hit_sure += gold.sure.count(l) ? 1 : 0;
    hit_possible += gold.possible.count(l) ? 1 : 0;
  }
}

double AerCounts::aer() const {
  const int64_t total = hypothesis + sure;
  return total ? 1.0 - static_cast<double>(hit_sure + hit_possible) / static_cast<double>(total) : 0.0;
}

double AerCounts::precision() const {
  return hypothesis ? static_cast<double>(hit_possible) / static_cast<double>(hypothesis) : 1.0;
}

double AerCounts::recall() const { return sure ? static_cast<double>(hit_sure) / static_cast<double>(sure) : 1.0; }

}  // namespace moe::metrics
