// CPU reference of the beam-search step scores (see beam_scores.h) and the checked entry point.
// Covered by tests/ops/beam_scores_test.cpp.
#include "ops/beam_scores.h"

#include <limits>

#include "ops/dispatch.h"

namespace moe {
namespace cpu {
namespace {
template <class T>
void run(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, Tensor& out) {
  const int64_t n = logp.shape()[0], v = logp.shape()[1];
  const T* lp = logp.data<T>();
  const float* c = cum.data<float>();
  const uint8_t* m = mode.data<uint8_t>();
  float* o = out.data<float>();
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < n; ++r) {
    const auto row_mode = static_cast<BeamRowMode>(m[r]);
    for (int64_t t = 0; t < v; ++t) {
      float s = c[r] + static_cast<float>(lp[r * v + t]);
      if (t == ids.pad || t == ids.bos) s = ninf;
      if (t == ids.eos && row_mode == BeamRowMode::no_eos) s = ninf;
      if (t != ids.eos && row_mode == BeamRowMode::eos_only) s = ninf;
      o[r * v + t] = s;
    }
  }
}
}  // namespace

void beam_scores(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, Tensor& out) {
  check_cpu_float("beam_scores", logp);
  if (logp.dtype() == DType::f64)
    run<double>(logp, cum, mode, ids, out);
  else
    run<float>(logp, cum, mode, ids, out);
}
}  // namespace cpu

void beam_scores_checks(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids) {
  MOE_CHECK(logp.shape().ndim() == 2, "beam_scores: log-probabilities must be [N, V], got ", logp.shape());
  const int64_t n = logp.shape()[0];
  check_shape("beam_scores", "cum (hypothesis scores)", cum, Shape{n});
  check_shape("beam_scores", "mode", mode, Shape{n});
  check_dtype("beam_scores", "cum", cum, DType::f32);
  check_dtype("beam_scores", "mode", mode, DType::u8);
  check_same_device("beam_scores", logp, cum, mode);
  MOE_CHECK(ids.eos >= 0 && ids.eos < logp.shape()[1], "beam_scores: </s> id ", ids.eos,
            " is outside the vocabulary [0, ", logp.shape()[1], ")");
}

void beam_scores(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, Tensor& out) {
  beam_scores_checks(logp, cum, mode, ids);
  check_shape("beam_scores", "out", out, logp.shape());
  check_dtype("beam_scores", "out", out, DType::f32);
  check_same_device("beam_scores", logp, out);
  if (logp.numel() == 0) return;
  MOE_DISPATCH(logp, beam_scores, logp, cum, mode, ids, out);
}

}  // namespace moe
