// CPU-vs-CUDA parity of the beam-search step scores (exact in f32: one addition per element) on the
// float4 path (V % 4 == 0) and the scalar path, bf16 and f16 log-probs exactly, and a whole beam
// search whose scorer lives on the GPU giving the CPU's hypotheses (repeated n-grams blocked or not, <unk>
// penalised or not), and the blocking and the penalty on bf16 log-probs. Skipped without a GPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "ops/beam_scores.h"
#include "translator/beam_search.h"
#include "translator/repeated_ngrams.h"
#include "translator/unk_penalty.h"

using namespace moe;

TEST_CASE("beam_scores parity", "[gpu][translator]") {
  for (auto [n, v] : {std::pair{1, 4}, {5, 37}, {40, 8000}, {3, 32001}, {640, 1024}}) {
    INFO(n << "x" << v);
    std::mt19937 rng(n * 131 + v);
    std::uniform_real_distribution<float> u(-12.f, 0.f);
    std::vector<float> lp(static_cast<size_t>(n) * v), cum(n);
    std::vector<uint8_t> mode(n);
    for (float& x : lp) x = u(rng);
    for (int r = 0; r < n; ++r) {
      cum[r] = r % 7 == 6 ? -INFINITY : u(rng);
      mode[r] = static_cast<uint8_t>(r % 3);
    }
    std::vector<float> res[2];
    for (int dev = 0; dev < 2; ++dev) {
      const Device d = dev ? Device::cuda(0) : Device::cpu();
      Tensor out = Tensor::empty(Shape{n, v}, DType::f32, d);
      beam_scores(Tensor::from_vector(lp, Shape{n, v}, d), Tensor::from_vector(cum, Shape{n}, d),
                  Tensor::from_vector(mode, Shape{n}, d), BeamSpecials{0, 2, 3}, out);
      res[dev] = out.to_vector<float>();
    }
    CHECK(res[1] == res[0]);
    // bf16 / f16 storage: the GPU reads rounded log-probs; compare with the CPU on the same rounded values.
    for (DType dt : {DType::bf16, DType::f16}) {
      INFO(dtype_name(dt));
      Tensor lp16 = Tensor::from_vector(lp, Shape{n, v}, Device::cuda(0), dt);
      Tensor out = Tensor::empty(Shape{n, v}, DType::f32, Device::cuda(0));
      beam_scores(lp16, Tensor::from_vector(cum, Shape{n}, Device::cuda(0)),
                  Tensor::from_vector(mode, Shape{n}, Device::cuda(0)), BeamSpecials{0, 2, 3}, out);
      Tensor ref = Tensor::empty(Shape{n, v}, DType::f32, Device::cpu());
      beam_scores(Tensor::from_vector(lp16.to_vector<float>(), Shape{n, v}), Tensor::from_vector(cum, Shape{n}),
                  Tensor::from_vector(mode, Shape{n}), BeamSpecials{0, 2, 3}, ref);
      CHECK(out.to_vector<float>() == ref.to_vector<float>());
    }
  }
}

TEST_CASE("beam search with a GPU scorer matches the CPU", "[gpu][translator]") {
  // A scorer whose log-probs depend on (row history length, token): deterministic, device-agnostic.
  const int64_t V = 50;
  auto run = [&](Device d, int64_t no_repeat, double unkpen) {
    std::vector<std::vector<int32_t>> hist;
    auto step = [&](const Tensor& prev) {
      const auto p = prev.to_vector<int32_t>();
      if (hist.empty()) hist.resize(p.size());
      std::vector<float> lp(p.size() * V);
      for (size_t r = 0; r < p.size(); ++r) {
        hist[r].push_back(p[r]);
        uint32_t h = 2166136261u;
        for (int32_t t : hist[r]) h = (h ^ static_cast<uint32_t>(t)) * 16777619u;
        double z = 0;
        for (int64_t t = 0; t < V; ++t) z += std::exp(((h >> (t % 16)) % 97) / 20.0);
        for (int64_t t = 0; t < V; ++t) lp[r * V + t] = static_cast<float>(((h >> (t % 16)) % 97) / 20.0 - std::log(z));
      }
      return Tensor::from_vector(lp, Shape{static_cast<int64_t>(p.size()), V}, d);
    };
    auto reorder = [&](const Tensor& origin) {
      const auto o = origin.to_vector<int32_t>();
      std::vector<std::vector<int32_t>> next;
      for (int32_t i : o) next.push_back(hist[i]);
      hist = next;
    };
    BeamOptions opt;
    opt.beam = 4;
    opt.n_best = 4;
    opt.max_len_b = 12;
    opt.no_repeat_ngram_size = no_repeat;
    opt.unk_id = 1;
    opt.unkpen = unkpen;
    return beam_search({3, 5, 9}, step, reorder, opt);
  };
  // blocked n-grams (translator/repeated_ngrams.h) and the <unk> penalty (translator/unk_penalty.h)
  for (const auto& [no_repeat, unkpen] :
       {std::pair<int64_t, double>{0, 0.0}, {1, 0.0}, {2, 0.0}, {0, 1.5}, {2, INFINITY}}) {
    INFO("no_repeat_ngram_size " << no_repeat << " unkpen " << unkpen);
    const auto cpu = run(Device::cpu(), no_repeat, unkpen), gpu = run(Device::cuda(0), no_repeat, unkpen);
    REQUIRE(cpu.size() == gpu.size());
    for (size_t s = 0; s < cpu.size(); ++s) {
      REQUIRE(cpu[s].size() == gpu[s].size());
      for (size_t h = 0; h < cpu[s].size(); ++h) {
        CHECK(cpu[s][h].tokens == gpu[s][h].tokens);
        CHECK(cpu[s][h].score == gpu[s][h].score);
      }
    }
  }
}

TEST_CASE("repeated n-grams blocked in bf16 log-probs on the GPU", "[gpu][translator]") {
  const std::vector<int32_t> a = {1, 2, 1}, b = {3, 3};
  std::vector<float> values(18);
  for (size_t i = 0; i < values.size(); ++i) values[i] = -0.5f * static_cast<float>(i);
  Tensor logp = Tensor::from_vector(values, Shape{3, 6}, Device::cuda(0), DType::bf16);
  block_repeated_ngrams(logp, {&a, &b, nullptr}, 2);
  const auto out = logp.to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) {
    INFO(i);
    CHECK(out[i] == (i == 2 || i == 9 ? -INFINITY : values[i]));  // row 0 token 2, row 1 token 3
  }
}

TEST_CASE("the <unk> penalty on bf16 log-probs on the GPU", "[gpu][translator]") {
  std::vector<float> values(12);
  for (size_t i = 0; i < values.size(); ++i) values[i] = -0.5f * static_cast<float>(i);
  Tensor logp = Tensor::from_vector(values, Shape{3, 4}, Device::cuda(0), DType::bf16);
  BeamOptions o;
  o.unk_id = 1;
  o.unkpen = 2.0;
  penalize_unk(logp, {1, 0, 1}, o);  // row 1 inside a forced prefix
  const auto out = logp.to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) {
    INFO(i);
    CHECK(out[i] == (i == 1 || i == 9 ? values[i] - 2.0f : values[i]));
  }
}
