// CPU reference of the fused log-softmax + cross-entropy with label smoothing (math in
// cross_entropy.h), in f32 and f64, plus argument checks, dispatch and count_non_ignored. The row passes
// vectorise: lane-wise max and sums (ops/cpu_math.h), exp_fast for f32, 8 lanes wide on AVX2 (run_wide of
// ops/cpu_isa.h, the same bytes).
// Covered by tests/ops/cross_entropy_test.cpp.
#include "ops/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cpu_threads.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"
#include "ops/dispatch.h"

namespace moe {

DType cross_entropy_loss_dtype(DType logits) { return logits == DType::f64 ? DType::f64 : DType::f32; }

namespace cpu {
namespace {
template <class T>
void forward(const Tensor& logits, const Tensor& targets, Tensor& loss, Tensor& lse, T eps, int ignore) {
  const int64_t V = logits.shape().last(), N = targets.numel();
  const T* x = logits.data<T>();
  const int32_t* t = targets.data<int32_t>();
  T *pl = loss.data<T>(), *plse = lse.data<T>();
  const T eps_i = V > 1 ? eps / T(V - 1) : T(0);
  for (int64_t n = 0; n < N; ++n)  // checked before the parallel rows (an error cannot leave a thread)
    MOE_CHECK(t[n] == ignore || (t[n] >= 0 && t[n] < V), "cross_entropy: target ", t[n], " of row ", n,
              " is outside [0, ", V, ") for logits of shape ", logits.shape(), " (ignore_index is ", ignore, ")");
  parallel_for(N, std::max<int64_t>(1, kElementsPerThread / std::max<int64_t>(1, V)), [&](int64_t n0, int64_t n1) {
    run_wide([&] {
      for (int64_t n = n0; n < n1; ++n) {
        const T* xr = x + n * V;
        if (t[n] == ignore) {
          pl[n] = 0;
          plse[n] = 0;
          continue;
        }
        const T m = row_max(xr, V);  // exp_of: exp_fast for f32 (-inf masked here), std::exp for f64
        const double s = row_sum(xr, V, [m](T v) { return masked_exp(v, m); });
        const T sx = static_cast<T>(row_sum(xr, V, [](T v) { return v; }));
        const T l = m + static_cast<T>(std::log(s));
        plse[n] = l;
        pl[n] = (T(1) - eps - eps_i) * (l - xr[t[n]]) + eps_i * (T(V) * l - sx);
      }
    });
  });  // rows in parallel
}

template <class T>
void backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& dloss, Tensor& dlogits,
              T eps, int ignore) {
  const int64_t V = logits.shape().last(), N = targets.numel();
  const T *x = logits.data<T>(), *plse = lse.data<T>(), *dl = dloss.data<T>();
  const int32_t* t = targets.data<int32_t>();
  T* dx = dlogits.data<T>();
  const T eps_i = V > 1 ? eps / T(V - 1) : T(0);
  parallel_for(N, std::max<int64_t>(1, kElementsPerThread / std::max<int64_t>(1, V)), [&](int64_t n0, int64_t n1) {
    run_wide([&] {
      for (int64_t n = n0; n < n1; ++n) {
        if (t[n] == ignore || t[n] < 0 || t[n] >= V) continue;
        const T* xr = x + n * V;
        T* dr = dx + n * V;
        const T g = dl[n], l = plse[n], tq = T(1) - eps - eps_i;
        auto grad = [&](int64_t j0, int64_t j1, T q) {  // dr[j] += g (p_j - q) with p_j = exp(x_j - lse)
          for (int64_t j = j0; j < j1; ++j) dr[j] += g * (masked_exp(xr[j], l) - q);
        };
        grad(0, t[n], eps_i);
        grad(t[n], t[n] + 1, eps_i + tq);  // the target's share of the smoothed distribution
        grad(t[n] + 1, V, eps_i);
      }
    });
  });  // rows in parallel
}
}  // namespace

void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& loss, Tensor& lse,
                           float label_smoothing, int ignore_index) {
  check_cpu_float("cross_entropy", logits);
  if (logits.dtype() == DType::f64)
    forward<double>(logits, targets, loss, lse, label_smoothing, ignore_index);
  else
    forward<float>(logits, targets, loss, lse, label_smoothing, ignore_index);
}

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& dloss,
                            Tensor& dlogits, float label_smoothing, int ignore_index) {
  check_cpu_float("cross_entropy backward", logits);
  if (logits.dtype() == DType::f64)
    backward<double>(logits, targets, lse, dloss, dlogits, label_smoothing, ignore_index);
  else
    backward<float>(logits, targets, lse, dloss, dlogits, label_smoothing, ignore_index);
}
}  // namespace cpu

namespace {
void check_args(const char* op, const Tensor& logits, const Tensor& targets, float eps) {
  MOE_CHECK(logits.shape().ndim() >= 1 && logits.shape().last() >= 1, op, ": logits of shape ", logits.shape(),
            " need a last (vocabulary) axis of at least one element");
  check_dtype(op, "targets", targets, DType::i32);
  check_same_device(op, logits, targets);
  std::vector<int64_t> dims = logits.shape().vec();
  if (!dims.empty()) dims.pop_back();
  const Shape rows(dims);
  MOE_CHECK(targets.shape() == rows, op, ": targets of shape ", targets.shape(), " do not match logits of shape ",
            logits.shape(), " (", rows, " required)");
  MOE_CHECK(eps >= 0.f && eps < 1.f, op, ": label smoothing must be in [0, 1), not ", eps);
  MOE_CHECK(eps == 0.f || logits.shape().last() > 1, op, ": label smoothing needs at least 2 classes, logits are ",
            logits.shape());
}
}  // namespace

void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& loss, Tensor& lse,
                           float label_smoothing, int ignore_index) {
  const char* op = "cross_entropy";
  check_args(op, logits, targets, label_smoothing);
  const DType ld = cross_entropy_loss_dtype(logits.dtype());
  check_same_device(op, logits, loss, lse);
  check_shape(op, "loss", loss, targets.shape());
  check_shape(op, "lse", lse, targets.shape());
  check_dtype(op, "loss", loss, ld);
  check_dtype(op, "lse", lse, ld);
  if (targets.numel() == 0) return;
  MOE_DISPATCH(logits, cross_entropy_forward, logits, targets, loss, lse, label_smoothing, ignore_index);
}

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& dloss,
                            Tensor& dlogits, float label_smoothing, int ignore_index) {
  const char* op = "cross_entropy backward";
  check_args(op, logits, targets, label_smoothing);
  const DType ld = cross_entropy_loss_dtype(logits.dtype());
  check_same_device(op, logits, lse, dloss, dlogits);
  check_shape(op, "lse", lse, targets.shape());
  check_shape(op, "loss gradient", dloss, targets.shape());
  check_shape(op, "logits gradient", dlogits, logits.shape());
  check_dtype(op, "lse", lse, ld);
  check_dtype(op, "loss gradient", dloss, ld);
  check_dtype(op, "logits gradient", dlogits, logits.dtype());
  if (targets.numel() == 0) return;
  MOE_DISPATCH(logits, cross_entropy_backward, logits, targets, lse, dloss, dlogits, label_smoothing, ignore_index);
}

int64_t count_non_ignored(const Tensor& targets, int ignore_index) {
  check_dtype("count_non_ignored", "targets", targets, DType::i32);
  int64_t c = 0;
  for (int32_t t : targets.to_vector<int32_t>()) c += t != ignore_index;
  return c;
}

}  // namespace moe
