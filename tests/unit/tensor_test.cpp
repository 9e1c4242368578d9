// Tensors, shapes, dtypes, devices and the caching allocator.
#include <catch2/catch.hpp>

#include "tensor/allocator.h"
#include "tensor/philox.h"
#include "tensor/tensor.h"

using namespace moe;

TEST_CASE("shape", "[tensor]") {
  Shape s{2, 3, 4};
  CHECK(s.numel() == 24);
  CHECK(s[-1] == 4);
  CHECK(s.outer(1) == 2);
  CHECK(s.inner(1) == 4);
  CHECK(s.str() == "[2,3,4]");
  CHECK(broadcast_shapes(Shape{2, 1, 4}, Shape{3, 1}, "add") == Shape{2, 3, 4});
  CHECK_THROWS_WITH(broadcast_shapes(Shape{2, 3}, Shape{4}, "add"),
                    Catch::Contains("add") && Catch::Contains("[2,3]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(s[3], Catch::Contains("axis 3"));
}

TEST_CASE("dtype conversions", "[tensor]") {
  for (float f : {0.f, 1.f, -2.5f, 3.140625f, 65504.f, 1e-5f, -1e-7f}) {
    CHECK(static_cast<float>(f16(f)) == Approx(f).epsilon(1e-3).margin(1e-7));
    CHECK(static_cast<float>(bf16(f)) == Approx(f).epsilon(1e-2).margin(1e-30));
  }
  CHECK(f32_to_bf16_bits(1.0f) == 0x3f80);
  CHECK(f32_to_f16_bits(1.0f) == 0x3c00);
  CHECK(std::isinf(static_cast<float>(f16(1e6f))));
  CHECK(dtype_from_name("bfloat16") == DType::bf16);
  CHECK_THROWS_WITH(dtype_from_name("f8"), Catch::Contains("unknown dtype 'f8'"));
}

TEST_CASE("device", "[tensor]") {
  CHECK(Device::parse("cpu").is_cpu());
  CHECK(Device::parse("cuda:1") == Device::cuda(1));
  CHECK(Device::parse("gpu2") == Device::cuda(2));
  CHECK_THROWS_WITH(Device::parse("tpu"), Catch::Contains("bad device 'tpu'"));
  if (!has_gpu()) {
    CHECK_THROWS_WITH(Tensor::empty(Shape{4}, DType::f32, Device::cuda(0)), Catch::Contains("not available"));
  }
  if (cuda_emulated()) {  // the CUDA emulator's devices exist, but "auto" keeps the (much faster) CPU
    CHECK(has_gpu());
    CHECK(Device::parse("auto").is_cpu());
  }
}

TEST_CASE("tensor views and conversions", "[tensor]") {
  Tensor t = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{3, 2});
  CHECK(t.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
  Tensor r = t.rows(1, 2);
  CHECK(r.shape() == Shape{2, 2});
  CHECK(r.to_vector<float>() == std::vector<float>{3, 4, 5, 6});
  CHECK(r.shares_storage(t));
  CHECK(t.view(Shape{6}).to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH(t.view(Shape{4}), Catch::Contains("[3,2]") && Catch::Contains("[4]"));
  Tensor c = t.clone();
  c.zero_();
  CHECK(t.to_vector<float>()[0] == 1);
  Tensor b = Tensor::from_vector(std::vector<float>{1.5f, -2}, Shape{2}, Device::cpu(), DType::bf16);
  CHECK(b.to_vector<float>() == std::vector<float>{1.5f, -2});
  CHECK_THROWS_WITH(t.data<double>(), Catch::Contains("f32") && Catch::Contains("f64"));
}

TEST_CASE("caching allocator reuses freed blocks and reports peak", "[tensor][allocator]") {
  Allocator a(Device::cpu());
  void* p = a.allocate(1000);
  a.deallocate(p);
  void* q = a.allocate(900);  // same rounded size class: the cached block comes back
  CHECK(q == p);
  CHECK(a.stats().raw_allocations == 1);
  void* big = a.allocate(3 << 20);
  CHECK(a.stats().peak_in_use >= (3u << 20));
  a.deallocate(big);
  a.deallocate(q);
  CHECK(a.stats().in_use == 0);
  a.release_cache();
  CHECK(a.stats().reserved == 0);
}

TEST_CASE("CPU allocator: a growing tensor reuses freed memory (arena, or size classes)", "[tensor][allocator]") {
  CHECK(Allocator::round_size_host(1000) == Allocator::round_size(1000));
  CHECK(Allocator::round_size_host(65 << 10) == (80u << 10));   // 64 KiB * 1.25
  CHECK(Allocator::round_size_host(3 << 20) == (3u << 20));     // 2 MiB * 1.5
  CHECK(Allocator::round_size_host((3 << 20) + 1) == (7u << 19));  // 2 MiB * 1.75
  for (size_t b = 1; b < (size_t(64) << 20); b = b * 3 / 2 + 7) {
    const size_t r = Allocator::round_size_host(b);
    REQUIRE(r >= b);
    REQUIRE((r <= 4096 + b + b / 4));  // at most a quarter (and a page) wasted
  }
  // a key/value cache growing by 16 KiB per step from 1 MiB to 8 MiB: one block freed per step
  Allocator a(Device::cpu());
  void* prev = nullptr;
  for (size_t bytes = 1 << 20; bytes <= (8u << 20); bytes += 16 << 10) {
    void* next = a.allocate(bytes);
    a.deallocate(prev);
    prev = next;
  }
  a.deallocate(prev);
  if (Allocator::host_arena_enabled()) {
    // freed ranges merge: at most about three of the largest blocks' pages, ever
    CHECK(a.stats().reserved <= (24u << 20));
  } else {
    // sanitizer builds, one system allocation per block: 13 size classes from 1 to 8 MiB, two blocks
    // live at a time: at most 26 (with 2 MiB rounding: one per step, 449)
    CHECK(a.stats().raw_allocations <= 26);
  }
}

TEST_CASE("a cuda device beyond the GPUs present is a clear error", "[tensor][allocator]") {
  // In a build without nvcc (lib/tensor/cuda_absent.cpp, e.g. scripts/test.sh --sanitize) gpu_count() is 0
  // and the message says the build has no CUDA support; elsewhere it counts the GPUs found.
  const int n = gpu_count();
  CHECK_THROWS_WITH(allocator_for(Device::cuda(n)), Catch::Contains("is not available") &&
                                                        Catch::Contains(std::to_string(n) + " GPU(s) found"));
}

TEST_CASE("out of memory names the request and what is in use", "[tensor][allocator]") {
  Allocator a(Device::cpu());
  a.set_limit(4 << 20);
  void* p = a.allocate(3 << 20);
  CHECK_THROWS_AS(a.allocate(3 << 20), OutOfMemory);
  CHECK_THROWS_WITH(a.allocate(3 << 20), Catch::Contains("3.00 MiB") && Catch::Contains("in use"));
  a.deallocate(p);
}

TEST_CASE("philox matches the Random123 known-answer vector", "[tensor][rng]") {
  // Random123 kat_vectors: philox4x32 10 rounds, counter = key = 0.
  const Philox4 r = philox4x32(Philox4{{0, 0, 0, 0}}, 0, 0);
  CHECK(r.v[0] == 0x6627e8d5u);
  CHECK(r.v[1] == 0xe169c58du);
  CHECK(r.v[2] == 0xbc57ac4cu);
  CHECK(r.v[3] == 0x9b00dbd8u);
  // Uniform and normal draws are in range and reproducible.
  CHECK(philox_uniform(5, 7, 11) == philox_uniform(5, 7, 11));
  double mean = 0;
  for (int i = 0; i < 4000; ++i) mean += philox_normal(1, 2, static_cast<uint64_t>(i));
  CHECK(std::abs(mean / 4000) < 0.06);
}
