// beam_topk against beam_scores followed by topk, bit for bit: random log-probabilities with ties, -inf
// entries and filler rows, NaN, the three row modes, f32 and f64, beams 1-5, k from 1 to past the fused limit;
// and its argument errors.
#include "ops/beam_topk.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ops/topk.h"

using namespace moe;

namespace {
struct Top {
  std::vector<float> values;
  std::vector<int32_t> indices;
};

Top fused(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, int64_t beams, int64_t k) {
  const int64_t groups = logp.shape()[0] / beams;
  Tensor v = Tensor::empty(Shape{groups, k}, DType::f32, Device::cpu());
  Tensor i = Tensor::empty(Shape{groups, k}, DType::i32, Device::cpu());
  beam_topk(logp, cum, mode, ids, beams, v, i);
  return {v.to_vector<float>(), i.to_vector<int32_t>()};
}

Top reference(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, int64_t beams, int64_t k) {
  const int64_t n = logp.shape()[0], v = logp.shape()[1];
  Tensor scores = Tensor::empty(Shape{n, v}, DType::f32, Device::cpu());
  beam_scores(logp, cum, mode, ids, scores);
  Tensor tv = Tensor::empty(Shape{n / beams, k}, DType::f32, Device::cpu());
  Tensor ti = Tensor::empty(Shape{n / beams, k}, DType::i32, Device::cpu());
  topk_forward(scores.view(Shape{n / beams, beams * v}), tv, ti);
  return {tv.to_vector<float>(), ti.to_vector<int32_t>()};
}

/// Equal bits (NaN included), so that the fused pass is exactly the two ops.
bool same(const Top& a, const Top& b) {
  return a.indices == b.indices && a.values.size() == b.values.size() &&
         std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0;
}
}  // namespace

TEST_CASE("beam_topk equals beam_scores + topk", "[ops][beam_topk]") {
  std::mt19937 rng(27);
  const float inf = std::numeric_limits<float>::infinity();
  int cases = 0;
  for (int64_t v : {7, 64, 131, 1000})
    for (int64_t beams : {1, 2, 5})
      for (DType dt : {DType::f32, DType::f64})
        for (int variant = 0; variant < 4; ++variant) {
          const int64_t groups = 3, n = groups * beams;
          std::vector<float> lp(static_cast<size_t>(n * v));
          // variant 0: continuous; 1: few distinct values (ties across beams and blocks); 2: with -inf entries,
          // a -inf filler row and an ascending row (every candidate beats the k-th best); 3: with a NaN
          std::uniform_int_distribution<int> few(-4, 0);
          std::normal_distribution<float> normal(-5.f, 3.f);
          for (size_t e = 0; e < lp.size(); ++e) lp[e] = variant == 1 ? static_cast<float>(few(rng)) : normal(rng);
          std::vector<float> cum(static_cast<size_t>(n));
          for (auto& c : cum) c = variant == 1 ? -1.f : normal(rng);
          if (variant == 2) {
            for (size_t e = 0; e < lp.size(); e += 3) lp[e] = -inf;
            cum[1 % n] = -inf;
            for (int64_t t = 0; t < v; ++t) lp[static_cast<size_t>(t)] = -20.f + 0.01f * static_cast<float>(t);
          }
          if (variant == 3) lp[static_cast<size_t>((n - 1) * v + v / 2)] = std::nanf("");
          std::vector<uint8_t> mode(static_cast<size_t>(n));
          for (int64_t r = 0; r < n; ++r) mode[r] = static_cast<uint8_t>(r % 3);  // normal, no_eos, eos_only
          Tensor logp = Tensor::from_vector(lp, Shape{n, v}, Device::cpu(), dt);
          Tensor tc = Tensor::from_vector(cum, Shape{n});
          Tensor tm = Tensor::from_vector(mode, Shape{n});
          for (int64_t k : {int64_t(1), int64_t(2), std::min<int64_t>(10, beams * v), std::min<int64_t>(70, beams * v)}) {
            for (BeamSpecials ids : {BeamSpecials{0, 2, 3}, BeamSpecials{-1, -1, 1}}) {
              INFO("v " << v << " beams " << beams << " variant " << variant << " k " << k << " f64 "
                        << (dt == DType::f64) << " pad " << ids.pad);
              CHECK(same(fused(logp, tc, tm, ids, beams, k), reference(logp, tc, tm, ids, beams, k)));
              ++cases;
            }
          }
        }
  CHECK(cases == 4 * 3 * 2 * 4 * 4 * 2);
}

TEST_CASE("beam_topk argument errors", "[ops][beam_topk]") {
  Tensor logp = Tensor::zeros(Shape{4, 5}, DType::f32, Device::cpu());
  Tensor cum = Tensor::zeros(Shape{4}, DType::f32, Device::cpu());
  Tensor mode = Tensor::zeros(Shape{4}, DType::u8, Device::cpu());
  auto call = [&](int64_t beams, int64_t groups, int64_t k, const Tensor& c) {
    Tensor v = Tensor::empty(Shape{groups, k}, DType::f32, Device::cpu());
    Tensor i = Tensor::empty(Shape{groups, k}, DType::i32, Device::cpu());
    beam_topk(logp, c, mode, BeamSpecials{}, beams, v, i);
  };
  CHECK_THROWS_WITH(call(3, 1, 2, cum), Catch::Contains("beam_topk") && Catch::Contains("groups of 3 beams"));
  CHECK_THROWS_WITH(call(2, 2, 11, cum), Catch::Contains("beam_topk") && Catch::Contains("[1, 10]"));
  CHECK_THROWS_WITH(call(2, 3, 2, cum), Catch::Contains("beam_topk") && Catch::Contains("values"));
  CHECK_THROWS_WITH(call(2, 2, 2, Tensor::zeros(Shape{3}, DType::f32, Device::cpu())),
                    Catch::Contains("beam_scores") && Catch::Contains("[3]"));
  CHECK_NOTHROW(call(2, 2, 10, cum));
}
