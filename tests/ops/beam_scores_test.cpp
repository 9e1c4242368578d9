// beam_scores on the CPU: hand-computed sums, the three row modes, special-token masking, f64 input,
// empty inputs and argument errors.
#include "ops/beam_scores.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

using namespace moe;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
}

TEST_CASE("beam_scores adds hypothesis scores and masks specials", "[translator][beam_scores]") {
  // V = 6: pad 0, unk 1, bos 2, eos 3, a 4, b 5.
  const std::vector<float> lp = {-1,   -2,   -3,   -4,   -5,   -6,    //
                                 -0.5, -1.5, -2.5, -3.5, -4.5, -5.5,  //
                                 -7,   -8,   -9,   -10,  -11,  -12};
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor logp = Tensor::from_vector(lp, Shape{3, 6}, Device::cpu(), dt);
    Tensor cum = Tensor::from_vector<float>({-1.f, 0.f, -kInf}, Shape{3});
    Tensor mode = Tensor::from_vector<uint8_t>({0, 1, 2}, Shape{3});
    Tensor out = Tensor::empty(Shape{3, 6}, DType::f32, Device::cpu());
    beam_scores(logp, cum, mode, BeamSpecials{0, 2, 3}, out);
    const auto o = out.to_vector<float>();
    CHECK(o == std::vector<float>{-kInf, -3, -kInf, -5, -6, -7,                //
                                  -kInf, -1.5f, -kInf, -kInf, -4.5f, -5.5f,    // mode 1: no </s>
                                  -kInf, -kInf, -kInf, -kInf, -kInf, -kInf});  // -inf row, mode 2
  }
  // mode 2 on a finite row keeps only </s>; ids of -1 mask nothing.
  Tensor logp = Tensor::from_vector<float>({-1, -2, -3}, Shape{1, 3});
  Tensor out = Tensor::empty(Shape{1, 3}, DType::f32, Device::cpu());
  beam_scores(logp, Tensor::from_vector<float>({0.5f}, Shape{1}), Tensor::from_vector<uint8_t>({2}, Shape{1}),
              BeamSpecials{-1, -1, 1}, out);
  CHECK(out.to_vector<float>() == std::vector<float>{-kInf, -1.5f, -kInf});
  beam_scores(logp, Tensor::from_vector<float>({0.5f}, Shape{1}), Tensor::from_vector<uint8_t>({0}, Shape{1}),
              BeamSpecials{-1, -1, 1}, out);
  CHECK(out.to_vector<float>() == std::vector<float>{-0.5f, -1.5f, -2.5f});
}

TEST_CASE("beam_scores edge shapes and errors", "[translator][beam_scores]") {
  // No rows: nothing to do.
  Tensor none = Tensor::empty(Shape{0, 7}, DType::f32, Device::cpu());
  Tensor out0 = Tensor::empty(Shape{0, 7}, DType::f32, Device::cpu());
  beam_scores(none, Tensor::empty(Shape{0}, DType::f32, Device::cpu()),
              Tensor::empty(Shape{0}, DType::u8, Device::cpu()), BeamSpecials{}, out0);
  // One row of 37 tokens (not a multiple of 4).
  std::vector<float> lp(37);
  for (int i = 0; i < 37; ++i) lp[i] = -0.1f * i;
  Tensor out = Tensor::empty(Shape{1, 37}, DType::f32, Device::cpu());
  beam_scores(Tensor::from_vector(lp, Shape{1, 37}), Tensor::from_vector<float>({-2.f}, Shape{1}),
              Tensor::from_vector<uint8_t>({0}, Shape{1}), BeamSpecials{0, 2, 3}, out);
  const auto o = out.to_vector<float>();
  CHECK(o[36] == Approx(-2 - 3.6));
  CHECK(o[3] == Approx(-2.3));
  CHECK(o[0] == -kInf);

  Tensor logp = Tensor::zeros(Shape{2, 5}, DType::f32, Device::cpu());
  Tensor cum = Tensor::zeros(Shape{2}, DType::f32, Device::cpu());
  Tensor mode = Tensor::zeros(Shape{2}, DType::u8, Device::cpu());
  Tensor o5 = Tensor::empty(Shape{2, 5}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(beam_scores(logp, Tensor::zeros(Shape{3}, DType::f32, Device::cpu()), mode, {}, o5),
                    Catch::Contains("beam_scores") && Catch::Contains("[3]") && Catch::Contains("[2]"));
  CHECK_THROWS_WITH(beam_scores(logp, cum, Tensor::zeros(Shape{2}, DType::f32, Device::cpu()), {}, o5),
                    Catch::Contains("beam_scores") && Catch::Contains("mode") && Catch::Contains("u8"));
  CHECK_THROWS_WITH(beam_scores(logp, cum, mode, BeamSpecials{0, 2, 9}, o5),
                    Catch::Contains("beam_scores") && Catch::Contains("</s> id 9"));
  CHECK_THROWS_WITH(beam_scores(logp.view(Shape{10}), cum, mode, {}, o5),
                    Catch::Contains("beam_scores") && Catch::Contains("[N, V]"));
  CHECK_THROWS_WITH(beam_scores(Tensor::zeros(Shape{2, 5}, DType::i32, Device::cpu()), cum, mode, {}, o5),
                    Catch::Contains("beam_scores") && Catch::Contains("i32"));
}
