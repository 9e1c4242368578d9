// gate_recorder.h implementation. Covered by tests/layers/mae_test.cpp ("recorder").
#include "layers/gate_recorder.h"

namespace moe {

void GateRecorder::record(const std::string& site, const Tensor& probs, const Tensor& query_padding,
                          const std::string& policy) {
  GateRecord r;
  r.probs = Tensor::from_vector(probs.to(Device::cpu()).to_vector<double>(), probs.shape(), Device::cpu(), DType::f32);
  if (query_padding.defined()) r.query_padding = query_padding.to(Device::cpu());
  r.policy = policy;
  records_[site].push_back(std::move(r));
}

}  // namespace moe
