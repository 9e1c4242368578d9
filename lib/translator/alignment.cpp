// alignment.h implementation. Covered by tests/translator/alignment_test.cpp.
#include "translator/alignment.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"

namespace moe {

AlignmentOutput AlignmentOutput::parse(const std::string& text, const std::string& option) {
  if (text == "hard") return {};
  if (text == "soft") return {AlignmentKind::soft, 0};
  std::istringstream in(text);
  float t = -1;
  const bool number = static_cast<bool>(in >> t) && (in >> std::ws).eof();
  MOE_CHECK(number && t >= 0 && t <= 1, option, " takes hard, soft or a threshold between 0 and 1, got '", text, "'");
  if (t == 1) return {};
  return {AlignmentKind::threshold, t};
}

std::vector<data::WordLink> alignment_links(const SoftAlignment& alignment, const AlignmentOutput& o,
                                            const TokenWords& words) {
  MOE_CHECK(o.kind != AlignmentKind::soft, "a soft alignment has no links: it keeps every weight");
  std::vector<data::WordLink> links;
  for (size_t t = 0; t < alignment.size(); ++t) {
    const std::vector<float>& row = alignment[t];
    const auto link = [&](size_t s) { links.push_back({static_cast<int32_t>(s), static_cast<int32_t>(t)}); };
    if (o.kind == AlignmentKind::hard) {
      if (!row.empty()) link(static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin()));
      continue;
    }
    for (size_t s = 0; s < row.size(); ++s)
      if (row[s] > o.threshold) link(s);
  }
  return o.words ? word_links(links, words) : links;
}

std::vector<int32_t> token_words(const data::Vocab& vocab, const std::vector<int32_t>& ids) {
  const bool pieces = dynamic_cast<const data::SentencePieceVocab*>(&vocab) != nullptr;
  std::vector<int32_t> words;
  words.reserve(ids.size() + 1);
  int32_t word = -1;
  for (int32_t id : ids) {
    if (word < 0 || !pieces || vocab.piece(id).starts_with("\u2581")) ++word;
    words.push_back(word);
  }
  words.push_back(-1);  // </s>
  return words;
}

std::vector<data::WordLink> word_links(const std::vector<data::WordLink>& links, const TokenWords& words) {
  std::vector<data::WordLink> out;
  for (const data::WordLink& l : links) {
    MOE_CHECK(l.source >= 0 && static_cast<size_t>(l.source) < words.source.size() && l.target >= 0 &&
                  static_cast<size_t>(l.target) < words.output.size(),
              "word links: link ", l.source, "-", l.target, " is past the pair's ", words.source.size(), " source and ",
              words.output.size(), " output positions");
    const int32_t s = words.source[static_cast<size_t>(l.source)], t = words.output[static_cast<size_t>(l.target)];
    if (s >= 0 && t >= 0) out.push_back({s, t});
  }
  std::sort(out.begin(), out.end(), [](const data::WordLink& a, const data::WordLink& b) {
    return a.target != b.target ? a.target < b.target : a.source < b.source;
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_alignment(const SoftAlignment& alignment, const AlignmentOutput& o, const TokenWords& words) {
  if (o.kind != AlignmentKind::soft) return data::format_word_links(alignment_links(alignment, o, words));
  MOE_CHECK(!o.words, "a soft alignment is over tokens: word links need hard or a threshold");
  std::ostringstream os;
  for (size_t t = 0; t < alignment.size(); ++t) {
    os << (t ? " " : "");
    for (size_t s = 0; s < alignment[t].size(); ++s) os << (s ? "," : "") << alignment[t][s];
  }
  return os.str();
}

void align_hypotheses(const Decoder& decoder, const Builder& b, const std::vector<const std::vector<int32_t>*>& sources,
                      std::vector<std::vector<Hypothesis>>& found) {
  MOE_CHECK(found.size() == sources.size(), "align: ", found.size(), " hypothesis lists for ", sources.size(),
            " sources");
  struct Row {
    size_t sentence;
    Hypothesis* hyp;
  };
  std::vector<Row> rows;
  int64_t S = 0, T = 0;  // the longest source with its </s>, the longest output with <s>
  for (size_t i = 0; i < found.size(); ++i)
    for (Hypothesis& h : found[i]) {
      rows.push_back({i, &h});
      S = std::max<int64_t>(S, static_cast<int64_t>(sources[i]->size()) + 1);
      T = std::max<int64_t>(T, static_cast<int64_t>(h.tokens.size()) + 1);
    }
  if (rows.empty()) return;
  const DecoderSpec c = decoder.spec();
  const int64_t N = static_cast<int64_t>(rows.size());
  std::vector<int32_t> src(static_cast<size_t>(N * S), c.pad_id), tgt(static_cast<size_t>(N * T), c.pad_id);
  std::vector<uint8_t> mask(static_cast<size_t>(N * S), 0);
  for (int64_t r = 0; r < N; ++r) {
    const std::vector<int32_t>& s = *sources[rows[r].sentence];
    const std::vector<int32_t>& y = rows[r].hyp->tokens;
    for (size_t j = 0; j <= s.size(); ++j) {
      src[static_cast<size_t>(r * S) + j] = j < s.size() ? s[j] : c.eos_id;
      mask[static_cast<size_t>(r * S) + j] = 1;
    }
    tgt[static_cast<size_t>(r * T)] = c.bos_id;
    std::copy(y.begin(), y.end(), tgt.begin() + r * T + 1);
  }
  const Device device = b.graph().device();
  const std::vector<float> w =
      decoder
          .alignment(b, Tensor::from_vector(src, Shape{N, S}, device), Tensor::from_vector(mask, Shape{N, S}, device),
                     Tensor::from_vector(tgt, Shape{N, T}, device))
          .val()
          .to_vector<float>();
  for (int64_t r = 0; r < N; ++r) {
    const size_t src_len = sources[rows[r].sentence]->size() + 1, out_len = rows[r].hyp->tokens.size() + 1;
    SoftAlignment& a = rows[r].hyp->alignment;
    a.assign(out_len, {});
    for (size_t t = 0; t < out_len; ++t) {
      const auto row = w.begin() + (r * T + static_cast<int64_t>(t)) * S;
      a[t].assign(row, row + static_cast<int64_t>(src_len));
    }
  }
}

}  // namespace moe
