// CPU-vs-CUDA parity of sort_by_key and inverse_permutation: results must match exactly, for sizes
// from 0 to 1M keys, 1 to 4096 segments, skewed keys and out-of-range keys. Skipped without a GPU.
#include <catch2/catch.hpp>
#include <random>

#include "ops/sort.h"

using namespace moe;

TEST_CASE("sort_by_key parity", "[gpu][sort]") {
  std::mt19937 rng(3);
  for (auto [n, segments] : {std::pair{0, 4},
                             {1, 1},
                             {33, 7},
                             {1000, 64},
                             {100000, 8},
                             {100000, 4096},
                             {1 << 20, 128},
                             {1 << 20, 4096},
                             {777, 1}}) {
    for (int mode = 0; mode < 3; ++mode) {  // uniform, skewed, with out-of-range keys
      INFO(n << " keys, " << segments << " segments, mode " << mode);
      std::uniform_int_distribution<int> u(0, segments - 1), hot(0, 3), bad(-3, segments + 3);
      std::vector<int32_t> keys(static_cast<size_t>(n));
      for (int32_t& k : keys) k = mode == 0 ? u(rng) : mode == 1 ? std::min(hot(rng), segments - 1) : bad(rng);
      Tensor perm[2], offsets[2], inv[2];
      for (int dev = 0; dev < 2; ++dev) {
        const Device d = dev ? Device::cuda(0) : Device::cpu();
        Tensor k = Tensor::from_vector(keys, Shape{n}, d);
        perm[dev] = Tensor::empty(Shape{n}, DType::i32, d);
        offsets[dev] = Tensor::empty(Shape{segments + 1}, DType::i32, d);
        inv[dev] = Tensor::empty(Shape{n}, DType::i32, d);
        sort_by_key(k, segments, perm[dev], offsets[dev]);
        inverse_permutation(perm[dev], inv[dev]);
      }
      CHECK(perm[1].to_vector<int32_t>() == perm[0].to_vector<int32_t>());
      CHECK(offsets[1].to_vector<int32_t>() == offsets[0].to_vector<int32_t>());
      CHECK(inv[1].to_vector<int32_t>() == inv[0].to_vector<int32_t>());
    }
  }
}
