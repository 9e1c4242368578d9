// Fused optimizer kernels over flat 1-D f32 tensors (views such as store.values().flat_range()):
// adam_update (Adam / AdamW, bias-corrected), sgd_update (SGD with momentum, or fairseq-style NAG),
// sum_squares (for the global gradient norm) and all_finite. Formulas in lib/ops/optimizer_math.h.
// The step ops (set_step_inputs, add_sum_squares, prepare_step and the updates that read their
// coefficients from a scalars tensor) never copy to the host nor wait for the device, so that a CUDA
// graph can record an optimizer step (tests/emu/optimizer_no_sync_test.cpp).
// These are not graph ops. CPU reference in lib/ops/optimizer.cpp, CUDA (float4 vectorised) in
// cuda/ops/optimizer.cu. Covered by tests/ops/optimizer_test.cpp, tests/gpu/optimizer_parity_test.cpp.
#pragma once
#include <cstdint>

#include "ops/optimizer_math.h"
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& c);
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdCoeffs& c);
void sum_squares(const Tensor& t, double& out);
void all_finite(const Tensor& t, bool& out);
void set_step_inputs(const Tensor& scalars, double lr, double grad_scale);
void add_sum_squares(const Tensor& t, const Tensor& acc);
void prepare_step(const Tensor& scalars, const StepConfig& c);
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& base,
                 const Tensor& scalars, StepScale which);
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdCoeffs& base,
                const Tensor& scalars, StepScale which);
}  // namespace cpu
namespace cuda {
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& c);
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdCoeffs& c);
void sum_squares(const Tensor& t, double& out);
void all_finite(const Tensor& t, bool& out);
void set_step_inputs(const Tensor& scalars, double lr, double grad_scale);
void add_sum_squares(const Tensor& t, const Tensor& acc);
void prepare_step(const Tensor& scalars, const StepConfig& c);
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& base,
                 const Tensor& scalars, StepScale which);
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdCoeffs& base,
                const Tensor& scalars, StepScale which);
}  // namespace cuda

/// One Adam step (step >= 1 counts this update) of param in place, with moment buffers m and v;
/// all four f32 tensors of equal shape on one device. decoupled = AdamW weight decay.
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, float lr, float beta1,
                 float beta2, float eps, float weight_decay, bool decoupled, int64_t step, float grad_scale = 1.f);
/// One SGD step; momentum_buf may be undefined when momentum == 0 and !nesterov. With nesterov it is
/// fairseq's NAG; lr_correct = lr / previous lr (1 for a constant rate).
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, float lr, float momentum,
                float weight_decay, bool nesterov, float grad_scale = 1.f, float lr_correct = 1.f);
/// Sum of squares of an f32 tensor (f32 partial sums per block, final sum in double). Syncs the host.
double sum_squares(const Tensor& t);
/// True when no element is NaN or infinite. Syncs the host.
bool all_finite(const Tensor& t);

/// The step ops over an optimizer's scalars (an f64 vector of StepSlot::count, optimizer_math.h) on the
/// parameters' device; none copies to the host or waits. set_step_inputs writes lr and grad_scale (on a GPU
/// a one-thread kernel whose arguments carry them, so it is no copy from host memory; call it outside a
/// graph capture, before each launch of the graph).
void set_step_inputs(const Tensor& scalars, double lr, double grad_scale);
/// acc (one f64 element on t's device, e.g. a slot of the scalars) += the sum of squares of t (f32).
void add_sum_squares(const Tensor& t, const Tensor& acc);
/// The norm, the skip flag, the clipped scale, the step count and the bias corrections from the sums.
void prepare_step(const Tensor& scalars, const StepConfig& c);
/// Adam / SGD steps whose lr, grad_scale (the clipped or the plain one), bias corrections and nag's
/// lr_correct come from the scalars, taking `base` for the rest; no-ops when the scalars say skip.
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamCoeffs& base,
                 const Tensor& scalars, StepScale which);
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const SgdCoeffs& base,
                const Tensor& scalars, StepScale which);

}  // namespace moe
