// CPU-vs-CUDA parity of cache_gather (a decoding cache's compaction, ops/cache_gather.h) in every copy unit:
// bf16 heads of 64 move in 16 bytes, 2 f32 per column in 8, 3 f32 in 4, 3 bf16 in 2 and 3 u8 in 1; the columns
// past the table stay as they were.
#include <catch2/catch.hpp>

#include "ops/cache_gather.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("cache_gather parity: every copy unit", "[gpu][cache_gather]") {
  for (const auto& [shape, dt] : {std::pair{Shape{5, 7, 2, 64}, DType::bf16}, std::pair{Shape{4, 6, 2}, DType::f32},
                                  std::pair{Shape{4, 6, 3}, DType::f32}, std::pair{Shape{4, 6, 3}, DType::bf16},
                                  std::pair{Shape{4, 6, 3}, DType::u8}}) {
    INFO(shape << " " << dtype_name(dt));
    const Tensor store = dt == DType::u8 ? test::random_ints(shape, dt, 31) : test::random_tensor(shape, 31, -1, 1, dt);
    std::vector<int32_t> rows(static_cast<size_t>(3 * 5));
    for (size_t i = 0; i < rows.size(); ++i)
      rows[i] = static_cast<int32_t>((i * 3 + 1) % static_cast<size_t>(shape[0]));
    const Tensor table = Tensor::from_vector(rows, Shape{3, 5});
    const Shape os = shape.with(0, 3).with(1, 6);
    Tensor oc = Tensor::zeros(os, dt, Device::cpu()), og = Tensor::zeros(os, dt, Device::cuda(0));
    cache_gather(store, table, oc);
    cache_gather(store.to(Device::cuda(0)), table.to(Device::cuda(0)), og);
    CHECK(og.to_vector<double>() == oc.to_vector<double>());
  }
}
