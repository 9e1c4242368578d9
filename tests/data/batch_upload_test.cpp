// BatchUploader: the CPU target passes batches through; a CUDA target without CUDA is a clear
// error; with a GPU the uploaded tensors equal the CPU ones. Tests lib/data/batch_upload.cpp.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "data/batch_upload.h"

using namespace moe;
using namespace moe::data;

TEST_CASE("batch upload: CPU pass-through, GPU copy when one answers", "[data]") {
  std::vector<int32_t> a{10, 11, 12}, b{20};
  Batch x = make_batch({std::span<const int32_t>(a), std::span<const int32_t>(b)},
                       {std::span<const int32_t>(b), std::span<const int32_t>(a)}, {0, 1}, 0, 2, 3);
  BatchUploader cpu(Device::cpu());
  Batch y = cpu.upload(x);
  CHECK(y.src.to_vector<int32_t>() == x.src.to_vector<int32_t>());
  CHECK(y.ids == x.ids);
  if (!built_with_cuda()) {
    CHECK_THROWS_WITH(BatchUploader(Device::cuda(0)), Catch::Matchers::Contains("built without CUDA"));
    return;
  }
  if (!has_gpu()) return;
  BatchUploader gpu(Device::cuda(0), 2);
  for (int k = 0; k < 5; ++k) {  // wraps the ring of 2 slots
    Batch z = gpu.upload(x);
    CHECK(z.src.device().is_cuda());
    CHECK(z.src.to_vector<int32_t>() == x.src.to_vector<int32_t>());
    CHECK(z.tgt_out.to_vector<int32_t>() == x.tgt_out.to_vector<int32_t>());
    CHECK(z.tgt_mask.to_vector<float>() == x.tgt_mask.to_vector<float>());
  }
  LmBatch l = make_lm_batch({{5, 6}}, {{6, 7}}, {{1, 1}}, {0}, 0);
  CHECK(gpu.upload(l).target.to_vector<int32_t>() == std::vector<int32_t>{6, 7});
}
