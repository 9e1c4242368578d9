// lexical_table.h implementation. Covered by tests/data/lexical_table_test.cpp.
#include "data/lexical_table.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string_view>
#include <unordered_map>

#include "common/error.h"
#include "data/corpus.h"

namespace moe::data {

namespace {
constexpr int32_t kNullWord = -1;

uint64_t pair_key(int32_t source, int32_t target) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(source)) << 32) | static_cast<uint32_t>(target);
}
int32_t key_source(uint64_t key) { return static_cast<int32_t>(static_cast<uint32_t>(key >> 32)); }
int32_t key_target(uint64_t key) { return static_cast<int32_t>(static_cast<uint32_t>(key)); }

using PairTable = std::unordered_map<uint64_t, double>;

/// fast_align's probability of aligning a target word to NULL under its diagonal prior.
constexpr double kNullPrior = 0.08;

/// |i / I - (j + 1) / J| for source word i (1-based) of f and target word j (0-based) of e: the distance from the
/// diagonal of fast_align's prior.
double diagonal_distance(size_t i, size_t j, const std::vector<int32_t>& f, const std::vector<int32_t>& e) {
  return std::abs(static_cast<double>(i) / static_cast<double>(f.size()) -
                  static_cast<double>(j + 1) / static_cast<double>(e.size()));
}

/// The unnormalised posterior of each source position (NULL first) for target word j of e given f:
/// t(e_j | f_i), times fast_align's diagonal prior when o.diagonal > 0. Returns the row's sum.
double alignment_row(const std::vector<int32_t>& f, const std::vector<int32_t>& e, size_t j, const PairTable& t,
                     const Model1Options& o, std::vector<double>& row) {
  row.assign(f.size() + 1, 0.0);
  double z = 0;  // the diagonal prior's normaliser over the source words
  for (size_t i = 1; i <= f.size() && o.diagonal > 0; ++i) z += std::exp(-o.diagonal * diagonal_distance(i, j, f, e));
  double sum = 0;
  for (size_t i = 0; i <= f.size(); ++i) {
    const auto it = t.find(pair_key(i == 0 ? kNullWord : f[i - 1], e[j]));
    row[i] = it == t.end() ? 0.0 : it->second;  // a pruned pair has t = 0
    if (o.diagonal > 0)
      row[i] *= i == 0 ? kNullPrior : (1 - kNullPrior) * std::exp(-o.diagonal * diagonal_distance(i, j, f, e)) / z;
    sum += row[i];
  }
  return sum;
}

/// One EM iteration: the expected counts of every pair under t, normalised per source word, without the pairs
/// below `o.prune`.
PairTable em_iteration(const std::vector<std::vector<int32_t>>& sources,
                       const std::vector<std::vector<int32_t>>& targets, const PairTable& t, const Model1Options& o) {
  PairTable counts;
  counts.reserve(t.size());
  std::vector<double> row;
  for (size_t s = 0; s < sources.size(); ++s) {
    const auto& f = sources[s];
    const auto& e = targets[s];
    if (f.empty() || e.empty()) continue;
    for (size_t j = 0; j < e.size(); ++j) {
      const int32_t target = e[j];
      const double sum = alignment_row(f, e, j, t, o, row);
      if (sum <= 0) continue;
      for (size_t i = 0; i <= f.size(); ++i)
        if (row[i] > 0) counts[pair_key(i == 0 ? kNullWord : f[i - 1], target)] += row[i] / sum;
    }
  }
  std::unordered_map<int32_t, double> totals;
  for (const auto& [key, c] : counts) totals[key_source(key)] += c;
  PairTable next;
  next.reserve(counts.size());
  for (const auto& [key, c] : counts) {
    const double p = c / totals[key_source(key)];
    if (p >= o.prune) next.emplace(key, p);
  }
  return next;
}

/// The table's order: by source, then probability descending, then target.
void sort_entries(LexicalTable& table) {
  std::sort(table.entries.begin(), table.entries.end(), [](const LexicalEntry& a, const LexicalEntry& b) {
    if (a.source != b.source) return a.source < b.source;
    if (a.prob != b.prob) return a.prob > b.prob;
    return a.target < b.target;
  });
}
}  // namespace

LexicalTable train_lexical_table(const std::vector<std::vector<int32_t>>& sources,
                                 const std::vector<std::vector<int32_t>>& targets, const Model1Options& o,
                                 std::vector<std::vector<WordLink>>* alignments) {
  MOE_CHECK(sources.size() == targets.size(), "lexical table: ", sources.size(), " source sentences but ",
            targets.size(), " target sentences");
  MOE_CHECK(o.iterations >= 1, "lexical table: iterations must be at least 1, got ", o.iterations);
  MOE_CHECK(o.prune >= 0 && o.prune < 1, "lexical table: the pruning threshold must be in [0, 1), got ", o.prune);
  MOE_CHECK(o.diagonal >= 0, "lexical table: the diagonal tension must be >= 0, got ", o.diagonal);
  // Uniform start: every co-occurring pair (and NULL with every target word) the same t, so that the first
  // E-step spreads each target word evenly over its sentence's source words.
  PairTable t;
  for (size_t s = 0; s < sources.size(); ++s) {
    if (sources[s].empty() || targets[s].empty()) continue;
    for (int32_t target : targets[s]) {
      t.emplace(pair_key(kNullWord, target), 1.0);
      for (int32_t source : sources[s]) t.emplace(pair_key(source, target), 1.0);
    }
  }
  for (int it = 0; it < o.iterations; ++it) t = em_iteration(sources, targets, t, o);
  if (alignments) {  // Viterbi: each target word with its most probable source word; none when NULL wins
    alignments->assign(sources.size(), {});
    std::vector<double> row;
    for (size_t s = 0; s < sources.size(); ++s)
      for (size_t j = 0; j < targets[s].size() && !sources[s].empty(); ++j) {
        if (alignment_row(sources[s], targets[s], j, t, o, row) <= 0) continue;
        const auto best = static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin());
        if (best > 0) (*alignments)[s].push_back({static_cast<int32_t>(best - 1), static_cast<int32_t>(j)});
      }
  }
  LexicalTable table;
  for (const auto& [key, p] : t)
    if (key_source(key) != kNullWord)
      table.entries.push_back({key_source(key), key_target(key), static_cast<float>(p)});
  sort_entries(table);
  return table;
}

void write_lexical_table(const LexicalTable& table, const Vocab& src, const Vocab& tgt, std::ostream& out) {
  char prob[32];
  for (const LexicalEntry& e : table.entries) {
    const auto r = std::to_chars(prob, prob + sizeof prob, e.prob);
    out << tgt.piece(e.target) << ' ' << src.piece(e.source) << ' ' << std::string_view(prob, r.ptr - prob) << '\n';
  }
}

namespace {
/// Each piece's id (a transparent map: looked up by string_view).
struct PieceHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceIds = std::unordered_map<std::string, int32_t, PieceHash, std::equal_to<>>;

PieceIds piece_ids(const Vocab& v) {
  PieceIds ids;
  for (int32_t i = 0; i < v.size(); ++i) ids.emplace(v.piece(i), i);
  return ids;
}
}  // namespace

LexicalTable read_lexical_table(const std::string& path, const Vocab& src, const Vocab& tgt, int64_t* skipped) {
  const auto src_ids = piece_ids(src), tgt_ids = piece_ids(tgt);
  LexicalTable table;
  int64_t unknown = 0;
  LineReader reader(path);
  std::string line;
  while (reader.next(line)) {
    const std::vector<std::string_view> fields = blank_fields(line);
    if (fields.empty()) continue;
    MOE_CHECK(fields.size() == 3, path, ":", reader.line_number(), ": expected 'target source probability', got '",
              shown(line), "'");
    const std::string_view prob = fields[2];
    float p = 0;
    MOE_CHECK(parse_number(prob, p) && p >= 0 && p <= 1, path, ":", reader.line_number(), ": the probability '",
              shown(prob), "' is not a number in [0, 1]");
    const auto t = tgt_ids.find(fields[0]), s = src_ids.find(fields[1]);
    if (s == src_ids.end() || t == tgt_ids.end()) {
      ++unknown;
      continue;
    }
    table.entries.push_back({s->second, t->second, p});
  }
  sort_entries(table);
  if (skipped) *skipped = unknown;
  return table;
}

}  // namespace moe::data
