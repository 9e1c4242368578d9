// Saving and restoring every value of a ParameterStore (parameters and state such as the MAE gates'
// running statistics, which training graphs update in place), so that tests that evaluate many
// graphs on one store (finite differences, causality probes) see the same state in each.
// Used by tests/support/causality.h and tests/layers/mae_test_util.h.
#pragma once
#include <vector>

#include "graph/parameters.h"

namespace moe::test {

/// Every store entry's values, in entry order.
inline std::vector<std::vector<double>> snapshot(const ParameterStore& store) {
  std::vector<std::vector<double>> s;
  for (int i = 0; i < static_cast<int>(store.entries().size()); ++i) s.push_back(store.value(i).to_vector<double>());
  return s;
}

/// Writes back what snapshot() saved.
inline void restore(ParameterStore& store, const std::vector<std::vector<double>>& s) {
  for (int i = 0; i < static_cast<int>(s.size()); ++i) {
    Tensor t = store.value(i);
    t.copy_from(Tensor::from_vector(s[static_cast<size_t>(i)], t.shape(), t.device(), t.dtype()));
  }
}

}  // namespace moe::test
