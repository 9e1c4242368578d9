// The nccl backend of lib/dist on one GPU (a 1-rank communicator, MPI's singleton mode): every
// collective on CUDA tensors, with the results a single rank must give. Compiled only into builds with
// NCCL (real CUDA; the emulator has none); the GPU suite skips itself without a GPU.
#ifdef MOE_WITH_NCCL
#include <catch2/catch.hpp>

#include "dist/communicator.h"

using namespace moe;

TEST_CASE("nccl: every collective on a 1-rank communicator", "[gpu][dist][nccl]") {
  const Device gpu = Device::cuda(0);
  auto c = dist::make_communicator("nccl", gpu);
  REQUIRE(c->world() == 1);
  auto on_gpu = [&](std::vector<float> v) { return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}).to(gpu); };
  Tensor t = on_gpu({1, 2, 3, 4});
  c->all_reduce(t);
  c->all_reduce_bucketed(t, 3);
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  c->broadcast(t, 0);
  Tensor gathered = Tensor::zeros(Shape{4}, DType::f32, gpu), scattered = Tensor::zeros(Shape{4}, DType::f32, gpu);
  c->all_gather(t, gathered);
  c->reduce_scatter(t, scattered);
  CHECK(gathered.to_vector<float>() == t.to_vector<float>());
  CHECK(scattered.to_vector<float>() == t.to_vector<float>());
  const Tensor rows = on_gpu({1, 2, 3, 4, 5, 6}).view(Shape{3, 2});
  Tensor out = Tensor::zeros(Shape{3, 2}, DType::f32, gpu);
  c->all_to_all_v(rows, {3}, out, {3});
  CHECK(out.to_vector<float>() == rows.to_vector<float>());
  c->barrier();
  auto d = c->dup();
  d->all_reduce(t);
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
}
#endif
