// word_alignments.h implementation. Covered by tests/data/word_alignments_test.cpp.
#include "data/word_alignments.h"

#include "common/error.h"
#include "data/corpus.h"

namespace moe::data {

std::vector<WordLink> parse_word_links(std::string_view line) {
  std::vector<WordLink> links;
  for (const std::string_view field : blank_fields(line)) {
    const size_t dash = field.find('-'), colon = field.find(':');
    WordLink l;
    const std::string_view s = field.substr(0, dash);
    const std::string_view t = dash == std::string_view::npos ? "" : field.substr(dash + 1, colon - dash - 1);
    const bool ok = dash != std::string_view::npos && parse_number(s, l.source) && parse_number(t, l.target) &&
                    l.source >= 0 && l.target >= 0 &&
                    (colon == std::string_view::npos ||
                     (parse_number(field.substr(colon + 1), l.weight) && l.weight > 0 && l.weight <= 1));
    MOE_CHECK(ok, "link ", links.size() + 1, " '", shown(field),
              "' is not 'source-target' (0-based token positions) or 'source-target:weight' (weight in (0, 1])");
    links.push_back(l);
  }
  return links;
}

std::string format_word_links(const std::vector<WordLink>& links) {
  std::string out;
  for (const WordLink& l : links) {
    if (!out.empty()) out += ' ';
    out += std::to_string(l.source) + '-' + std::to_string(l.target);
  }
  return out;
}

void WordAlignments::append(const std::vector<WordLink>& line, const EncodedCorpus& src, const EncodedCorpus& tgt) {
  const int64_t i = lines();
  MOE_CHECK(i < src.size(), "more lines than the ", src.size(), " pairs");
  for (const WordLink& l : line)
    MOE_CHECK(l.source < src.length(i) && l.target < tgt.length(i), "link ", l.source, "-", l.target,
              " is past the pair's ", src.length(i), " source and ", tgt.length(i),
              " target tokens (positions count the vocabularies' subword tokens from 0)");
  links_.insert(links_.end(), line.begin(), line.end());
  offsets_.push_back(static_cast<int64_t>(links_.size()));
}

WordAlignments::WordAlignments(const std::vector<std::vector<WordLink>>& links, const EncodedCorpus& src,
                               const EncodedCorpus& tgt) {
  MOE_CHECK(src.size() == tgt.size(), "word alignments: ", src.size(), " source but ", tgt.size(), " target lines");
  for (const std::vector<WordLink>& line : links) try {
      append(line, src, tgt);
    } catch (const Error& e) {
      MOE_FAIL("word alignments: pair ", lines() + 1, ": ", e.what());
    }
  MOE_CHECK(lines() == src.size(), "word alignments: ", lines(), " lines of links for ", src.size(), " pairs");
}

WordAlignments WordAlignments::read(const std::string& path, const EncodedCorpus& src, const EncodedCorpus& tgt) {
  MOE_CHECK(src.size() == tgt.size(), path, ": ", src.size(), " source but ", tgt.size(), " target lines");
  WordAlignments out;
  LineReader reader(path);
  std::string line;
  while (reader.next(line)) try {
      out.append(parse_word_links(line), src, tgt);
    } catch (const Error& e) {
      MOE_FAIL(path, ":", reader.line_number(), ": ", e.what());
    }
  MOE_CHECK(out.lines() == src.size(), path, " has ", out.lines(), " lines but there are ", src.size(),
            " training pairs: one line of links per pair");
  return out;
}

std::vector<WordLink> WordAlignments::of(int64_t line) const {
  MOE_CHECK(line >= 0 && line < lines(), "word alignments: line ", line, " of ", lines());
  return {links_.begin() + offsets_[static_cast<size_t>(line)],
          links_.begin() + offsets_[static_cast<size_t>(line) + 1]};
}

Tensor WordAlignments::guidance(const Batch& batch) const {
  const int64_t B = batch.size(), S = batch.src.shape()[1], T = batch.tgt_in.shape()[1];
  std::vector<float> g(static_cast<size_t>(B * T * S), 0.f), row_sum(static_cast<size_t>(B * T), 0.f);
  for (int64_t b = 0; b < B; ++b)
    for (const WordLink& l : of(batch.ids[static_cast<size_t>(b)])) {
      MOE_CHECK(l.source < S && l.target < T, "word alignments: link ", l.source, "-", l.target, " of line ",
                batch.ids[static_cast<size_t>(b)] + 1, " is outside the batch's ", S, " x ", T, " positions");
      g[static_cast<size_t>((b * T + l.target) * S + l.source)] += l.weight;
      row_sum[static_cast<size_t>(b * T + l.target)] += l.weight;
    }
  for (size_t i = 0; i < g.size(); ++i)
    if (const float sum = row_sum[i / static_cast<size_t>(S)]; sum > 0) g[i] /= sum;
  return Tensor::from_vector(g, Shape{B, T, S});
}

}  // namespace moe::data
