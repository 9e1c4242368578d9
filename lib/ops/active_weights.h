// ActiveWeights<Set>: while a scope holds a set of per-weight forms (ops/int8_gemm.h's quantized weights,
// ops/transposed_weights.h's transposed copies), the CPU GEMMs and slices find a weight's form in it by the
// weight's data pointer. Scopes are opened and closed by the inference programs' main thread; several sets may be
// active at once (an ensemble), each weight found in the first set that has it. Covered by
// tests/ops/int8_gemm_test.cpp and tests/ops/transposed_weights_test.cpp.
#pragma once
#include <algorithm>
#include <vector>

#include "tensor/tensor.h"

namespace moe {

template <class Set>
class ActiveWeights {
 public:
  explicit ActiveWeights(const Set* weights) : weights_(weights) { active().push_back(weights); }
  ~ActiveWeights() { active().erase(std::find(active().begin(), active().end(), weights_)); }
  ActiveWeights(const ActiveWeights&) = delete;
  ActiveWeights& operator=(const ActiveWeights&) = delete;

  /// The form of `w` in an active set (Set::find), or nullptr.
  static auto find(const Tensor& w) -> decltype(std::declval<const Set&>().find(w)) {
    for (const Set* set : active())
      if (auto* form = set->find(w)) return form;
    return nullptr;
  }

 private:
  static std::vector<const Set*>& active() {
    static std::vector<const Set*> sets;
    return sets;
  }
  const Set* weights_;
};

}  // namespace moe
