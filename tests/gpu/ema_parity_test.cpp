// CPU-vs-CUDA parity of the parameter EMA (lib/ops/ema.h): the aligned float4 path with a scalar
// tail and the unaligned scalar path, odd sizes, several updates. Skipped without a GPU.
#include <catch2/catch.hpp>

#include "ops/ema.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("ema_update parity", "[gpu][ema]") {
  for (int64_t n : {1, 7, 1003}) {
    for (int64_t skew : {0, 1}) {  // skew 1: the views start 4 bytes in, unaligned for float4
      INFO("n=" << n << " skew=" << skew);
      const Tensor e0 = test::random_tensor(Shape{n + skew}, 11, -1, 1, DType::f32);
      const Tensor p0 = test::random_tensor(Shape{n + skew}, 12, -1, 1, DType::f32);
      std::vector<double> res[2];
      for (int dev = 0; dev < 2; ++dev) {
        const Device d = dev ? Device::cuda(0) : Device::cpu();
        Tensor e = e0.to(d), p = p0.to(d);
        for (float decay : {0.9f, 0.999f, 0.f}) ema_update(e.flat_range(skew, n), p.flat_range(skew, n), decay);
        res[dev] = e.to_vector<double>();
      }
      CHECK(test::rel_error(res[1], res[0]) < 1e-6);
    }
  }
}
