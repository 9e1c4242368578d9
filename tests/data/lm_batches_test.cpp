// LM training batches (lib/data/lm_batches.cpp): without masking they are LmTrainStream's blocks;
// with masking the targets are the blocks' tokens, the input differs only at selected positions,
// the draws are keyed by the data position (a restored stream masks exactly as the original one;
// two epochs mask differently), and the masked evaluation batches are fixed and in corpus order.
#include "data/lm_batches.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using namespace moe;
using namespace moe::data;

namespace {
std::vector<int32_t> stream_of(int n) {
  std::vector<int32_t> s(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) s[static_cast<size_t>(i)] = i % 50 == 49 ? 3 : 10 + (i * 7) % 90;  // </s> = 3
  return s;
}

MlmOptions mlm_options() {
  MlmOptions o;
  o.mask_id = 100;
  o.vocab_size = 101;
  o.seed = 5;
  return o;
}

/// Every masked batch: target = the block's tokens, input = target except at selected positions,
/// tokens = selected count.
void check_masked(const LmBatch& b, const MlmOptions& o) {
  const auto in = b.input.to_vector<int32_t>(), tg = b.target.to_vector<int32_t>();
  const auto m = b.mask.to_vector<float>();
  int64_t selected = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (m[i] == 0.f) {
      CHECK(in[i] == tg[i]);
      continue;
    }
    ++selected;
    CHECK(tg[i] >= o.first_normal_id);  // </s> and padding are never selected
  }
  CHECK(selected == b.tokens);
  CHECK(selected > 0);
}
}  // namespace

TEST_CASE("lm batches: plain batches are the stream's blocks", "[data][lm]") {
  const auto s = stream_of(1000);
  LmBatchStream plain(LmTrainStream(s, 32, 4, 9));
  LmTrainStream blocks(s, 32, 4, 9);
  CHECK(plain.blocks() == blocks.blocks());
  while (auto a = plain.next()) {
    auto b = blocks.next();
    REQUIRE(b);
    CHECK(a->ids == b->ids);
    CHECK(a->input.to_vector<int32_t>() == b->input.to_vector<int32_t>());
    CHECK(a->target.to_vector<int32_t>() == b->target.to_vector<int32_t>());
    CHECK(a->tokens == b->tokens);
  }
  CHECK_FALSE(blocks.next());  // both at the end of the epoch
  CHECK(plain.state() == blocks.state());
}

TEST_CASE("lm batches: masked batches are keyed by the data position", "[data][lm][mlm]") {
  const auto s = stream_of(2000);
  const MlmOptions o = mlm_options();
  LmBatchStream a(LmTrainStream(s, 32, 4, 9), o);
  std::vector<std::vector<int32_t>> first_epoch;
  int64_t selected = 0, tokens = 0;
  while (auto b = a.next()) {
    check_masked(*b, o);
    selected += b->tokens;
    tokens += b->input.numel();
    first_epoch.push_back(b->input.to_vector<int32_t>());
  }
  CHECK(static_cast<double>(selected) / static_cast<double>(tokens) == Approx(0.15).margin(0.03));
  // Resume: a stream restored to a mid-epoch state masks the rest exactly as the original.
  LmBatchStream x(LmTrainStream(s, 32, 4, 9), o), y(LmTrainStream(s, 32, 4, 9), o);
  for (int k = 0; k < 5; ++k) x.next();
  y.restore(LmBatchStream::State::from_string(x.state().to_string()));
  for (int k = 0; k < 20; ++k) {
    auto p = x.next(), q = y.next();
    REQUIRE(bool(p) == bool(q));
    if (!p) continue;
    CHECK(p->ids == q->ids);
    CHECK(p->input.to_vector<int32_t>() == q->input.to_vector<int32_t>());
    CHECK(p->mask.to_vector<float>() == q->mask.to_vector<float>());
  }
  // The second epoch draws new masks (and a new block order).
  int same = 0, n = 0;
  for (size_t i = 0; i < first_epoch.size(); ++i) {
    auto b = a.next();
    REQUIRE(b);
    same += b->input.to_vector<int32_t>() == first_epoch[i];
    ++n;
  }
  CHECK(same < n);
}

TEST_CASE("lm batches: masked evaluation batches are fixed and in order", "[data][lm][mlm]") {
  const auto s = stream_of(700);
  const MlmOptions o = mlm_options();
  const auto a = masked_eval_batches(s, 64, 3, o), b = masked_eval_batches(s, 64, 3, o);
  REQUIRE(a.size() == b.size());
  std::vector<int64_t> ids;
  for (size_t i = 0; i < a.size(); ++i) {
    check_masked(a[i], o);
    CHECK(a[i].input.to_vector<int32_t>() == b[i].input.to_vector<int32_t>());
    ids.insert(ids.end(), a[i].ids.begin(), a[i].ids.end());
  }
  CHECK(ids.size() == 11);  // 699 targets in blocks of 64
  for (size_t i = 0; i < ids.size(); ++i) CHECK(ids[i] == static_cast<int64_t>(i));
  MlmOptions never = o;
  never.mask_prob = 0;
  CHECK_THROWS_WITH(masked_eval_batches(s, 64, 3, never), Catch::Contains("no token"));
}
