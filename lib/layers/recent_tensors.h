// RecentTensors: a few recently built constant tensors (averaging matrices, expert-to-head maps) kept
// by key, so the layers of one batch build and upload each only once. Use one per thread
// (thread_local); the oldest of `capacity` entries is dropped first. Covered through its users'
// tests (tests/layers/mae_test.cpp).
#pragma once
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace moe {

template <class Key, size_t capacity = 8>
class RecentTensors {
 public:
  /// The tensor under `key`, built by make() when absent.
  template <class Make>
  Tensor get(const Key& key, Make make) {
    for (const auto& [k, t] : recent_)
      if (k == key) return t;
    Tensor t = make();
    if (recent_.size() >= capacity) recent_.erase(recent_.begin());
    recent_.emplace_back(key, t);
    return t;
  }

 private:
  std::vector<std::pair<Key, Tensor>> recent_;
};

}  // namespace moe
