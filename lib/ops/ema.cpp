// CPU reference of the parameter EMA (see ema.h) and the checked entry point.
// Covered by tests/ops/ema_test.cpp.
#include "ops/ema.h"

#include "common/cpu_threads.h"
#include "ops/dispatch.h"
#include "ops/ema_math.h"

namespace moe {
namespace cpu {

void ema_update(const Tensor& ema, const Tensor& value, float decay) {
  float* e = ema.data<float>();
  const float* p = value.data<float>();
  const float keep = 1.f - decay;
  parallel_for(ema.numel(), kElementsPerThread, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) e[i] = ema_element(e[i], p[i], decay, keep);
  });
}

}  // namespace cpu

void ema_update(const Tensor& ema, const Tensor& value, float decay) {
  MOE_CHECK(ema.defined() && value.defined(), "ema_update: undefined tensor");
  check_same_device("ema_update", ema, value);
  check_dtype("ema_update", "ema", ema, DType::f32);
  check_dtype("ema_update", "value", value, DType::f32);
  check_shape("ema_update", "value", value, ema.shape());
  MOE_CHECK(decay >= 0.f && decay < 1.f, "ema_update: decay must be in [0, 1), got ", decay);
  if (ema.numel() == 0) return;
  MOE_DISPATCH(ema, ema_update, ema, value, decay);
}

}  // namespace moe
