// CPU reference of the stable counting sort by key and of inverse_permutation (see sort.h), and
// their dispatch: count keys per segment (out-of-range keys in an extra last bucket), prefix-sum
// the counts, then place positions in increasing order. Covered by tests/ops/sort_test.cpp.
#include "ops/sort.h"

#include <vector>

#include "ops/dispatch.h"

namespace moe {
namespace cpu {

void sort_by_key(const Tensor& keys, int num_segments, Tensor& perm, Tensor& offsets) {
  const int64_t n = keys.numel();
  const int32_t* pk = keys.data<int32_t>();
  int32_t* pp = perm.data<int32_t>();
  int32_t* po = offsets.data<int32_t>();
  auto bucket = [&](int32_t key) { return key >= 0 && key < num_segments ? key : num_segments; };
  std::vector<int64_t> start(static_cast<size_t>(num_segments) + 2, 0);
  for (int64_t i = 0; i < n; ++i) ++start[static_cast<size_t>(bucket(pk[i])) + 1];
  for (size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
  for (int s = 0; s <= num_segments; ++s) po[s] = static_cast<int32_t>(start[static_cast<size_t>(s)]);
  for (int64_t i = 0; i < n; ++i) pp[start[static_cast<size_t>(bucket(pk[i]))]++] = static_cast<int32_t>(i);
}

void inverse_permutation(const Tensor& perm, Tensor& inv) {
  const int64_t n = perm.numel();
  const int32_t* pp = perm.data<int32_t>();
  int32_t* pi = inv.data<int32_t>();
  for (int64_t j = 0; j < n; ++j) {
    MOE_CHECK(pp[j] >= 0 && pp[j] < n, "inverse_permutation: perm[", j, "] = ", pp[j], " is outside [0, ", n, ")");
    pi[pp[j]] = static_cast<int32_t>(j);
  }
}

}  // namespace cpu

void sort_by_key(const Tensor& keys, int num_segments, Tensor& perm, Tensor& offsets) {
  check_same_device("sort_by_key", keys, perm, offsets);
  MOE_CHECK(num_segments >= 1, "sort_by_key: num_segments must be >= 1, got ", num_segments);
  MOE_CHECK(keys.shape().ndim() == 1, "sort_by_key: keys must be 1-D, got shape ", keys.shape());
  MOE_CHECK(keys.numel() < (int64_t(1) << 31), "sort_by_key: ", keys.numel(), " keys do not fit i32 positions");
  check_dtype("sort_by_key", "keys", keys, DType::i32);
  check_dtype("sort_by_key", "perm", perm, DType::i32);
  check_dtype("sort_by_key", "offsets", offsets, DType::i32);
  check_shape("sort_by_key", "perm", perm, keys.shape());
  check_shape("sort_by_key", "offsets", offsets, Shape{int64_t(num_segments) + 1});
  MOE_DISPATCH(keys, sort_by_key, keys, num_segments, perm, offsets);
}

void inverse_permutation(const Tensor& perm, Tensor& inv) {
  check_same_device("inverse_permutation", perm, inv);
  MOE_CHECK(perm.shape().ndim() == 1, "inverse_permutation: perm must be 1-D, got shape ", perm.shape());
  check_dtype("inverse_permutation", "perm", perm, DType::i32);
  check_dtype("inverse_permutation", "inv", inv, DType::i32);
  check_shape("inverse_permutation", "inv", inv, perm.shape());
  if (perm.numel() == 0) return;
  MOE_DISPATCH(perm, inverse_permutation, perm, inv);
}

}  // namespace moe
