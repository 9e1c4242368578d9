// target_weights.h implementation. Covered by tests/data/target_weights_test.cpp.
#include "data/target_weights.h"

#include <cmath>
#include <string_view>

#include "common/error.h"
#include "data/corpus.h"

namespace moe::data {

namespace {

/// The blank-separated numbers of one line, each finite and >= 0.
std::vector<float> parse_weights(std::string_view line) {
  std::vector<float> out;
  for (const std::string_view field : blank_fields(line)) {
    float w = 0;
    MOE_CHECK(parse_number(field, w) && std::isfinite(w) && w >= 0, "weight ", out.size() + 1, " '", shown(field),
              "' is not a finite number >= 0");
    out.push_back(w);
  }
  return out;
}

}  // namespace

TargetWeights TargetWeights::read(const std::string& path, WeightingType type, const EncodedCorpus& tgt,
                                  WeightedLines lines) {
  const bool pairs = lines == WeightedLines::pairs;
  const char* const line_name = pairs ? "pair" : "line";
  const std::string all = pairs ? " training pairs" : " lines of data.train.text";
  TargetWeights out;
  out.type_ = type;
  LineReader reader(path);
  std::string line;
  double sum = 0, tokens = 0;
  while (reader.next(line)) try {
      const int64_t i = out.lines();
      MOE_CHECK(i < tgt.size(), "more lines than the ", tgt.size(), all);
      std::vector<float> w = parse_weights(line);
      const auto n = static_cast<size_t>(tgt.length(i));
      if (type == WeightingType::sentence) {
        MOE_CHECK(w.size() == 1, w.size(), " weights; data.train.weighting sentence takes one per ", line_name);
      } else {
        MOE_CHECK(w.size() == n || w.size() == n + 1, w.size(), " weights for the ", line_name, "'s ", n,
                  pairs ? " target" : "", " tokens; data.train.weighting word takes one per", pairs ? " target" : "",
                  " subword token as the vocabulary encodes it (moe-vocab encode), and optionally one more for </s>");
        if (w.size() == n) w.push_back(1.f);  // </s>, as Marian
      }
      for (float x : w) sum += type == WeightingType::sentence ? x * static_cast<double>(n + 1) : x;
      tokens += static_cast<double>(n + 1);
      out.weights_.insert(out.weights_.end(), w.begin(), w.end());
      out.offsets_.push_back(static_cast<int64_t>(out.weights_.size()));
    } catch (const Error& e) {
      MOE_FAIL(path, ":", reader.line_number(), ": ", e.what());
    }
  MOE_CHECK(out.lines() == tgt.size(), path, " has ", out.lines(), " lines but there are ", tgt.size(), all,
            ": one line of weights per ", line_name);
  out.mean_ = tokens > 0 ? sum / tokens : 1;
  return out;
}

std::vector<float> TargetWeights::of(int64_t line, int64_t target_tokens) const {
  MOE_CHECK(line >= 0 && line < lines(), "target weights: line ", line, " of ", lines());
  const auto begin = weights_.begin() + offsets_[static_cast<size_t>(line)],
             end = weights_.begin() + offsets_[static_cast<size_t>(line) + 1];
  if (type_ == WeightingType::sentence) return std::vector<float>(static_cast<size_t>(target_tokens), *begin);
  MOE_CHECK(end - begin == target_tokens, "target weights: line ", line + 1, " holds ", end - begin,
            " weights, the batch has ", target_tokens, " target tokens");
  return {begin, end};
}

float TargetWeights::at(int64_t line, int64_t token) const {
  MOE_CHECK(line >= 0 && line < lines(), "target weights: line ", line, " of ", lines());
  const int64_t begin = offsets_[static_cast<size_t>(line)], n = offsets_[static_cast<size_t>(line) + 1] - begin;
  if (type_ == WeightingType::sentence) return weights_[static_cast<size_t>(begin)];
  MOE_CHECK(token >= 0 && token < n, "target weights: token ", token, " of line ", line + 1, ", which holds ", n,
            " weights");
  return weights_[static_cast<size_t>(begin + token)];
}

Tensor TargetWeights::of(const Batch& batch) const {
  const int64_t B = batch.size(), T = batch.tgt_out.shape()[1];
  std::vector<float> w(static_cast<size_t>(B * T), 0.f);
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<float> row = of(batch.ids[static_cast<size_t>(b)], batch.tgt_lengths[static_cast<size_t>(b)]);
    std::copy(row.begin(), row.end(), w.begin() + b * T);
  }
  return Tensor::from_vector(w, Shape{B, T});
}

}  // namespace moe::data
