// Dynamic loss scaling for f16 training (Micikevicius et al. 2018): the loss gradient is multiplied
// by `scale` (2^15 at first); an update whose gradient norm overflows (Inf/NaN) is skipped and the
// scale halved; after `window` clean updates in a row the scale doubles. Disabled (scale 1, never
// changes) for f32/bf16. Covered by tests/training/schedule_test.cpp ("loss scaler").
#pragma once
#include <cstdint>

namespace moe {

class LossScaler {
 public:
  LossScaler() = default;
  LossScaler(bool enabled, double initial_scale, int64_t window)
      : enabled_(enabled), scale_(enabled ? initial_scale : 1.0), window_(window) {}

  bool enabled() const { return enabled_; }
  double scale() const { return scale_; }
  int64_t clean_updates() const { return clean_; }

  /// Records the outcome of an update; returns false when it overflowed (the update must be skipped).
  bool update(bool overflow) {
    if (!enabled_) return !overflow;
    if (overflow) {
      scale_ = scale_ > 1.0 ? scale_ / 2 : 1.0;
      clean_ = 0;
      return false;
    }
    if (++clean_ >= window_) {
      scale_ *= 2;
      clean_ = 0;
    }
    return true;
  }
  void restore(double scale, int64_t clean) {
    if (!enabled_) return;
    scale_ = scale;
    clean_ = clean;
  }

 private:
  bool enabled_ = false;
  double scale_ = 1.0;
  int64_t window_ = 2000;
  int64_t clean_ = 0;
};

}  // namespace moe
