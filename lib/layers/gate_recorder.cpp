// gate_recorder.h implementation. Covered by tests/layers/mae_test.cpp ("recorder") and
// tests/layers/gate_recorder_test.cpp.
#include "layers/gate_recorder.h"

#include <algorithm>

namespace moe {

namespace {
Tensor host(const Tensor& t, DType dtype) {
  if (!t.defined()) return t;
  const Tensor c = t.to(Device::cpu());
  if (c.dtype() == dtype) return c;
  return Tensor::from_vector(c.to_vector<double>(), c.shape(), Device::cpu(), dtype);
}

Shape with_last(const Shape& lead, int64_t last) {
  std::vector<int64_t> d = lead.vec();
  d.push_back(last);
  return Shape(d);
}
}  // namespace

void GateRecorder::record(const std::string& site, const Tensor& probs, const Tensor& query_padding,
                          const std::string& policy) {
  GateRecord r;
  r.family = "mae";
  r.probs = probs;
  r.query_padding = query_padding;
  r.policy = policy;
  record(site, std::move(r));
}

void GateRecorder::record(const std::string& site, GateRecord r) {
  r.probs = host(r.probs, DType::f32);
  r.query_padding = host(r.query_padding, DType::u8);
  r.experts = host(r.experts, DType::i32);
  r.gates = host(r.gates, DType::f32);
  records_[site].push_back(std::move(r));
}

GateRecord routed_gate_record(const std::vector<int32_t>& expert, const std::vector<double>& gate,
                              const std::vector<int32_t>& token, int64_t experts, const Shape& lead) {
  const int64_t rows = lead.numel();
  MOE_CHECK(expert.size() == gate.size() && expert.size() == token.size(), "routed_gate_record: ", expert.size(),
            " experts, ", gate.size(), " gates and ", token.size(), " tokens");
  std::vector<std::vector<std::pair<double, int32_t>>> per_row(static_cast<size_t>(rows));
  for (size_t a = 0; a < expert.size(); ++a) {
    MOE_CHECK(token[a] >= 0 && token[a] < rows && expert[a] >= 0 && expert[a] < experts, "routed_gate_record: token ",
              token[a], " / expert ", expert[a], " out of range (", rows, " tokens, ", experts, " experts)");
    per_row[static_cast<size_t>(token[a])].emplace_back(gate[a], expert[a]);
  }
  size_t k = 0;
  for (const auto& r : per_row) k = std::max(k, r.size());
  std::vector<double> probs(static_cast<size_t>(rows * experts), 0.0), gates(static_cast<size_t>(rows) * k, 0.0);
  std::vector<int32_t> ids(static_cast<size_t>(rows) * k, -1);
  for (size_t r = 0; r < per_row.size(); ++r) {
    auto& list = per_row[r];
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    for (size_t j = 0; j < list.size(); ++j) {
      probs[r * static_cast<size_t>(experts) + static_cast<size_t>(list[j].second)] += list[j].first;
      gates[r * k + j] = list[j].first;
      ids[r * k + j] = list[j].second;
    }
  }
  GateRecord out;
  out.probs = Tensor::from_vector(probs, with_last(lead, experts), Device::cpu(), DType::f32);
  out.experts = Tensor::from_vector(ids, with_last(lead, static_cast<int64_t>(k)), Device::cpu());
  out.gates = Tensor::from_vector(gates, with_last(lead, static_cast<int64_t>(k)), Device::cpu(), DType::f32);
  return out;
}

}  // namespace moe
