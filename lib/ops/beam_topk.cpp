// beam_topk.h implementation: the fused CPU pass, and beam_scores + topk everywhere else (and for large k,
// where a sorted list of k costs more than topk's partial sort). The CPU pass runs 8 lanes wide on AVX2 (run_wide
// of ops/cpu_isa.h, the same results). Covered by tests/ops/beam_topk_test.cpp.
#include "ops/beam_topk.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/cpu_threads.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"
#include "ops/dispatch.h"
#include "ops/topk.h"

namespace moe {
namespace {
constexpr int64_t kBlock = 64;      // candidates added and compared with the k-th best at a time
constexpr int64_t kFusedMaxK = 64;  // above this, beam_scores + topk

/// The k best (value, index) pairs seen so far, best first, in topk's order.
class TopList {
 public:
  explicit TopList(int64_t k) : k_(k), v_(static_cast<size_t>(k)), i_(static_cast<size_t>(k)) {}
  void clear() { n_ = 0; }
  bool full() const { return n_ == k_; }
  float worst() const { return v_[static_cast<size_t>(k_ - 1)]; }
  /// Indices arrive in increasing order, so an equal value never displaces an earlier one.
  void offer(float x, int32_t i) {
    if (full() && !above(x, i, v_[k_ - 1], i_[k_ - 1])) return;
    int64_t p = full() ? k_ - 1 : n_++;
    for (; p > 0 && above(x, i, v_[p - 1], i_[p - 1]); --p) {
      v_[p] = v_[p - 1];
      i_[p] = i_[p - 1];
    }
    v_[p] = x;
    i_[p] = i;
  }
  void write(float* values, int32_t* indices) const {
    std::copy(v_.begin(), v_.end(), values);
    std::copy(i_.begin(), i_.end(), indices);
  }

 private:
  static bool above(float x, int32_t i, float y, int32_t j) {  // ops/topk.h's order
    const bool nx = std::isnan(x), ny = std::isnan(y);
    if (nx != ny) return nx;
    if (!nx && x != y) return x > y;
    return i < j;
  }
  int64_t k_, n_ = 0;
  std::vector<float> v_;
  std::vector<int32_t> i_;
};

bool masked(int64_t t, BeamRowMode mode, BeamSpecials ids) {  // beam_scores' masks
  if (t == ids.pad || t == ids.bos) return true;
  if (t == ids.eos) return mode == BeamRowMode::no_eos;
  return mode == BeamRowMode::eos_only;
}

template <class T>
void fused(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, int64_t beams, Tensor& values,
           Tensor& indices) {
  const int64_t v = logp.shape()[1], groups = logp.shape()[0] / beams, k = values.shape()[1];
  const T* lp = logp.data<T>();
  const float* c = cum.data<float>();
  const uint8_t* m = mode.data<uint8_t>();
  float* pv = values.data<float>();
  int32_t* pi = indices.data<int32_t>();
  parallel_for(groups, std::max<int64_t>(1, kElementsPerThread / std::max<int64_t>(1, beams * v)),
               [&](int64_t g0, int64_t g1) {
                 TopList top(k);
                 float s[kBlock];
                 run_wide([&] {
                   for (int64_t g = g0; g < g1; ++g) {
                     top.clear();
                     for (int64_t b = 0; b < beams; ++b) {
                       const int64_t r = g * beams + b;
                       const T* row = lp + r * v;
                       const auto row_mode = static_cast<BeamRowMode>(m[r]);
                       for (int64_t j0 = 0; j0 < v; j0 += kBlock) {
                         const int64_t n = std::min(kBlock, v - j0);
                         int nan = 0;
                         for (int64_t j = 0; j < n; ++j) {
                           s[j] = c[r] + static_cast<float>(row[j0 + j]);  // as beam_scores adds
                           nan |= s[j] != s[j];
                         }
                         const float mx = cpu::row_max(s, n);  // lane-wise; NaN does not enter it (flagged above)
                         // masked entries are -inf, never above the k-th best: a block whose unmasked maximum
                         // is not above it holds no candidate
                         if (top.full() && !nan && mx <= top.worst()) continue;
                         for (int64_t j = 0; j < n; ++j) {
                           const int64_t t = j0 + j;
                           const float x = masked(t, row_mode, ids) ? -std::numeric_limits<float>::infinity() : s[j];
                           top.offer(x, static_cast<int32_t>(b * v + t));
                         }
                       }
                     }
                     top.write(pv + g * k, pi + g * k);
                   }
                 });
               });
}
}  // namespace

namespace cpu {
void beam_topk(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, int64_t beams,
               Tensor& values, Tensor& indices) {
  check_cpu_float("beam_topk", logp);
  if (logp.dtype() == DType::f64)
    fused<double>(logp, cum, mode, ids, beams, values, indices);
  else
    fused<float>(logp, cum, mode, ids, beams, values, indices);
}
}  // namespace cpu

void beam_topk(const Tensor& logp, const Tensor& cum, const Tensor& mode, BeamSpecials ids, int64_t beams,
               Tensor& values, Tensor& indices) {
  MOE_CHECK(logp.shape().ndim() == 2, "beam_topk: log-probabilities must be [N, V], got ", logp.shape());
  const int64_t n = logp.shape()[0], v = logp.shape()[1];
  MOE_CHECK(beams >= 1 && n % beams == 0, "beam_topk: ", n, " rows are not groups of ", beams, " beams");
  MOE_CHECK(values.shape().ndim() == 2, "beam_topk: values must be [groups, k], got ", values.shape());
  const int64_t groups = n / beams, k = values.shape()[1];
  MOE_CHECK(k >= 1 && k <= beams * v, "beam_topk: k = ", k, " must be in [1, ", beams * v, "]");
  MOE_CHECK(beams * v < std::numeric_limits<int32_t>::max(), "beam_topk: ", beams, " beams x ", v,
            " tokens exceed the i32 index range");
  check_shape("beam_topk", "values", values, Shape{groups, k});
  check_shape("beam_topk", "indices", indices, Shape{groups, k});
  check_dtype("beam_topk", "values", values, DType::f32);
  check_dtype("beam_topk", "indices", indices, DType::i32);
  check_same_device("beam_topk", logp, values, indices);
  if (logp.device().is_cpu() && k <= kFusedMaxK && n > 0) {
    beam_scores_checks(logp, cum, mode, ids);
    cpu::beam_topk(logp, cum, mode, ids, beams, values, indices);
    return;
  }
  Tensor scores = Tensor::empty(Shape{n, v}, DType::f32, logp.device());
  beam_scores(logp, cum, mode, ids, scores);
  if (n > 0) topk_forward(scores.view(Shape{groups, beams * v}), values, indices);
}

}  // namespace moe
