// LM training blocks and evaluation windows. Covered by tests/data/lm_stream_test.cpp.
#include "data/lm_stream.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "common/error.h"

namespace moe::data {

std::vector<int32_t> flatten_stream(const EncodedCorpus& corpus, int32_t eos_id) {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(corpus.tokens() + corpus.size()));
  for (int64_t i = 0; i < corpus.size(); ++i) {
    const auto s = corpus.sentence(i);
    out.insert(out.end(), s.begin(), s.end());
    out.push_back(eos_id);
  }
  return out;
}

std::string LmTrainStream::State::to_string() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "{\"epoch\":%lld,\"position\":%lld,\"seed\":%llu,\"config\":%llu}",
                (long long)epoch, (long long)position, (unsigned long long)seed, (unsigned long long)config);
  return buf;
}

LmTrainStream::State LmTrainStream::State::from_string(const std::string& s) {
  long long e, p;
  unsigned long long seed, config;
  const int n = std::sscanf(s.c_str(), " {\"epoch\":%lld,\"position\":%lld,\"seed\":%llu,\"config\":%llu}", &e,
                            &p, &seed, &config);
  MOE_CHECK(n == 4 && e >= 0 && p >= 0, "LmTrainStream: cannot parse the data state '", s, "'");
  return State{e, p, seed, config};
}

LmTrainStream::LmTrainStream(std::vector<int32_t> stream, int64_t tokens_per_sample, int64_t batch_size,
                             uint64_t seed, bool shuffle, int32_t pad_id)
    : stream_(std::move(stream)), L_(tokens_per_sample), B_(batch_size), seed_(seed), shuffle_(shuffle), pad_(pad_id) {
  MOE_CHECK(L_ > 0 && B_ > 0, "LmTrainStream: tokens_per_sample (", L_, ") and batch_size (", B_,
            ") must be positive");
  const auto n = static_cast<int64_t>(stream_.size());
  MOE_CHECK(n >= 2, "LmTrainStream: the stream has ", n, " tokens; need at least 2");
  blocks_ = (n - 1 + L_ - 1) / L_;  // targets are x[1..n-1]
  config_ = (static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ull) ^ (static_cast<uint64_t>(L_) << 40) ^
            (static_cast<uint64_t>(B_) << 20) ^ (shuffle_ ? 1 : 0);
  state_.seed = seed_;
  state_.config = config_;
}

void LmTrainStream::restore(const State& s) {
  MOE_CHECK(s.seed == seed_, "LmTrainStream: the saved data state has seed ", s.seed, ", this run ", seed_);
  MOE_CHECK(s.config == config_, "LmTrainStream: the saved data state was made with another stream length, "
            "tokens_per_sample or batch size (config ", s.config, ", this run ", config_, ")");
  state_ = s;
  built_epoch_ = -1;
}

void LmTrainStream::build_epoch() {
  order_.resize(static_cast<size_t>(blocks_));
  for (int64_t i = 0; i < blocks_; ++i) order_[static_cast<size_t>(i)] = i;
  if (shuffle_) {
    std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(state_.epoch) * 0xBF58476D1CE4E5B9ull + 1);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng() % i]);
  }
  built_epoch_ = state_.epoch;
}

std::optional<LmBatch> LmTrainStream::next() {
  if (state_.position >= blocks_) {
    state_ = State{state_.epoch + 1, 0, seed_, config_};
    return std::nullopt;
  }
  if (built_epoch_ != state_.epoch) build_epoch();
  const int64_t end = std::min(blocks_, state_.position + B_);
  const auto n = static_cast<int64_t>(stream_.size());
  std::vector<std::vector<int32_t>> in, tg;
  std::vector<std::vector<float>> m;
  std::vector<int64_t> ids;
  for (int64_t p = state_.position; p < end; ++p) {
    const int64_t k = order_[static_cast<size_t>(p)];
    const int64_t lo = k * L_, hi = std::min(n - 1, lo + L_);
    in.emplace_back(stream_.begin() + lo, stream_.begin() + hi);
    tg.emplace_back(stream_.begin() + lo + 1, stream_.begin() + hi + 1);
    m.emplace_back(static_cast<size_t>(hi - lo), 1.f);
    ids.push_back(k);
  }
  state_.position = end;
  return make_lm_batch(in, tg, m, std::move(ids), pad_);
}

std::vector<EvalWindow> eval_windows(int64_t n, int64_t context, int64_t stride) {
  MOE_CHECK(context > 0 && stride > 0 && stride <= context, "eval_windows: need 0 < stride (", stride,
            ") <= context (", context, ")");
  std::vector<EvalWindow> w;
  if (n <= 0) return w;
  w.push_back({0, std::min(n, context), 0});
  for (int64_t scored = w[0].length; scored < n; scored += stride) {
    const int64_t end = std::min(n, scored + stride);
    const int64_t begin = std::max<int64_t>(0, end - context);
    w.push_back({begin, end - begin, scored - begin});
  }
  return w;
}

std::vector<LmBatch> eval_batches(const std::vector<int32_t>& stream, int64_t context, int64_t stride,
                                  int64_t batch_size, int32_t eos_id, int32_t pad_id) {
  MOE_CHECK(batch_size > 0, "eval_batches: batch_size must be positive, got ", batch_size);
  const auto windows = eval_windows(static_cast<int64_t>(stream.size()), context, stride);
  std::vector<LmBatch> out;
  std::vector<std::vector<int32_t>> in, tg;
  std::vector<std::vector<float>> m;
  std::vector<int64_t> ids;
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto& w = windows[i];
    std::vector<int32_t> x(static_cast<size_t>(w.length));
    for (int64_t t = 0; t < w.length; ++t) x[t] = w.begin + t == 0 ? eos_id : stream[w.begin + t - 1];
    in.push_back(std::move(x));
    tg.emplace_back(stream.begin() + w.begin, stream.begin() + w.begin + w.length);
    std::vector<float> mk(static_cast<size_t>(w.length), 0.f);
    std::fill(mk.begin() + w.score_from, mk.end(), 1.f);
    m.push_back(std::move(mk));
    ids.push_back(static_cast<int64_t>(i));
    if (static_cast<int64_t>(in.size()) == batch_size || i + 1 == windows.size()) {
      out.push_back(make_lm_batch(in, tg, m, std::move(ids), pad_id));
      in.clear(); tg.clear(); m.clear(); ids.clear();
    }
  }
  return out;
}

}  // namespace moe::data
