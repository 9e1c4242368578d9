// parameter_ema.h implementation. Covered by tests/training/ema_test.cpp.
#include "training/parameter_ema.h"

#include "common/error.h"
#include "ops/ema.h"

namespace moe {

ParameterEma::ParameterEma(const ParameterStore& params, double decay)
    : ema_(std::make_unique<ParameterStore>(params.device())), decay_(static_cast<float>(decay)) {
  MOE_CHECK(decay > 0 && decay < 1, "train.ema_decay must be in (0, 1) when on, got ", decay);
  for (const ParamEntry& e : params.entries()) {
    if (e.state)
      ema_->declare_state(e.name, e.shape, e.init);
    else
      ema_->declare(e.name, e.shape, e.init, e.group);
  }
  ema_->allocate();
  for (const ParamEntry& e : params.entries())
    MOE_CHECK(ema_->entry(ema_->find(e.name)).offset == e.offset, "train.ema_decay: the smoothed copy of '", e.name,
              "' is laid out differently");
  Tensor values = ema_->values();  // a handle on the store's buffer
  values.copy_from(params.values());
}

void ParameterEma::update(const ParameterStore& params) { ema_update(ema_->values(), params.values(), decay_); }

void ParameterEma::restore(const Tensor& values, const std::string& source) {
  MOE_CHECK(values.dtype() == DType::f32 && values.shape() == ema_->values().shape(), source,
            ": the smoothed parameters are ", dtype_name(values.dtype()), " ", values.shape(), ", the model needs f32 ",
            ema_->values().shape());
  Tensor own = ema_->values();
  own.copy_from(values);
}

}  // namespace moe
