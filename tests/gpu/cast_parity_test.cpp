// CPU-vs-CUDA parity of the dtype casts (skipped without a GPU): every pair of f32/bf16/f16 and
// i32 <-> f32 must match the CPU bit for bit (both round to nearest even / truncate and saturate),
// and u8 (padding masks) to the three float types as well,
// the same-dtype backward (dx += dy) too, gradients through casts match in f32, bf16 and f16, and the
// casts the CUDA kernel does not do (i32 <-> bf16 / f16) are refused.
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "ops/cast.h"
#include "support/parity.h"

using namespace moe;

namespace {
Tensor cast_on(const Tensor& x, DType dt, Device d) {
  Tensor src = x.to(d), out = Tensor::empty(x.shape(), dt, d);
  cast_forward(src, out);
  return out;
}
}  // namespace

TEST_CASE("cast parity: bit-exact conversions", "[gpu][cast]") {
  std::vector<float> v = {0.f, -0.f, 1.f, 1.00390625f, 65504.f, 70000.f, 1e-8f, -3.7f, 2.5f, -2.5f, 3e9f, -3e9f, NAN};
  for (int i = 0; i < 1000; ++i) v.push_back(std::sin(i * 0.37f) * std::pow(10.f, float(i % 9 - 4)));
  const Tensor base = Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())});
  const DType floats[] = {DType::f32, DType::bf16, DType::f16};
  for (DType from : floats)
    for (DType to : floats) {
      INFO(dtype_name(from) << " -> " << dtype_name(to));
      const Tensor x = cast_on(base, from, Device::cpu());
      const std::vector<float> cpu = cast_on(x, to, Device::cpu()).to_vector<float>();
      const std::vector<float> gpu = cast_on(x, to, Device::cuda(0)).to_vector<float>();
      for (size_t i = 0; i < cpu.size(); ++i) CHECK(((std::isnan(cpu[i]) && std::isnan(gpu[i])) || cpu[i] == gpu[i]));
    }
  const Tensor ints_cpu = cast_on(base, DType::i32, Device::cpu()),
               ints_gpu = cast_on(base, DType::i32, Device::cuda(0));
  CHECK(ints_cpu.to_vector<int32_t>() == ints_gpu.to_vector<int32_t>());
  CHECK(cast_on(ints_cpu, DType::f32, Device::cpu()).to_vector<float>() ==
        cast_on(ints_cpu, DType::f32, Device::cuda(0)).to_vector<float>());
  std::vector<uint8_t> mask(1001);  // odd length: the vector loop and the scalar tail
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = static_cast<uint8_t>((i * 37) % 256);
  const Tensor m = Tensor::from_vector(mask, Shape{1001});
  for (DType to : floats) {
    INFO("u8 -> " << dtype_name(to));
    CHECK(cast_on(m, to, Device::cpu()).to_vector<float>() == cast_on(m, to, Device::cuda(0)).to_vector<float>());
  }
}

TEST_CASE("cast parity: gradients", "[gpu][cast]") {
  Tensor x = test::random_tensor(Shape{31, 67}, 5);
  for (DType dt : test::kFloatTypes) {
    INFO(dtype_name(dt));
    auto r = test::parity({x},
                          [dt](Graph& g, const std::vector<Expr>& in) {
                            // CPU reference: f32 -> f64 -> f32 (the CPU has no bf16 math);
                            // GPU: f32 -> bf16 -> f32, or bf16 / f16 -> f32 -> bf16 / f16.
                            const bool cpu = g.device().is_cpu();
                            const DType mid = cpu ? DType::f64 : (dt == DType::f32 ? DType::bf16 : DType::f32);
                            return cast(cast(in[0], mid) * cast(in[0], mid), cpu ? DType::f32 : dt);
                          },
                          dt, {0});
    CHECK(r.forward < test::bar(dt, 1e-2, 1e-2));
    CHECK(r.backward < test::bar(dt, 2e-2, 2e-2));
  }
}

TEST_CASE("cast parity: backward between equal dtypes accumulates", "[gpu][cast]") {
  // The graph never casts to the same dtype and a same-dtype forward is a copy, but cast_backward
  // adds dy into dx in f32 with one rounding, which the CPU does alike. 1003 elements: vector
  // quads and a scalar tail.
  const Shape s{1003};
  for (DType dt : test::kFloatTypes) {
    INFO(dtype_name(dt));
    std::vector<float> res[2];
    for (int dev = 0; dev < 2; ++dev) {
      const Device d = dev ? Device::cuda(0) : Device::cpu();
      Tensor dy = test::random_tensor(s, 7, -1, 1, dt, d), dx = test::random_tensor(s, 8, -1, 1, dt, d);
      cast_backward(dy, dx);
      res[dev] = dx.to_vector<float>();
    }
    CHECK(res[1] == res[0]);
  }
}

TEST_CASE("cast: i32 <-> bf16 / f16 are refused on the GPU", "[gpu][cast]") {
  const Device gpu = Device::cuda(0);
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor i = Tensor::zeros(Shape{4}, DType::i32, gpu), h = Tensor::zeros(Shape{4}, dt, gpu);
    CHECK_THROWS_WITH(cast_forward(i, h), Catch::Contains("between i32 and f32"));
    CHECK_THROWS_WITH(cast_forward(h, i), Catch::Contains("between i32 and f32"));
  }
}
