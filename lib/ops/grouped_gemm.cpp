// CPU reference of the grouped GEMM (one GEMM call, ops/cpu_gemm.h, per non-empty expert segment, then the
// epilogue v = act(alpha v + bias[e]) over its rows; offsets read on the host), the epilogue's gradient
// (dz = dout * (out > 0) with relu, dbias[e] += column sums of dz over e's rows) and the public entry points
// with their argument checks. See grouped_gemm.h; covered by tests/ops/grouped_gemm_test.cpp.
#include "ops/grouped_gemm.h"

#include <algorithm>
#include <vector>

#include "common/cpu_threads.h"
#include "ops/cpu_gemm.h"
#include "ops/dispatch.h"
#include "ops/int8_gemm.h"

namespace moe {

namespace {
/// Host copy of the offsets, checked: offsets[0] = 0, non-decreasing, offsets[E] = rows.
std::vector<int32_t> host_offsets(const Tensor& offsets, int64_t rows) {
  std::vector<int32_t> off = offsets.to_vector<int32_t>();
  bool ok = !off.empty() && off.front() == 0 && off.back() == rows;
  for (size_t e = 1; ok && e < off.size(); ++e) ok = off[e] >= off[e - 1];
  MOE_CHECK(ok, "grouped_gemm: offsets must start at 0, not decrease and end at the row count ", rows);
  return off;
}

void gemm(const float* a, const float* b, float* c, bool ta, bool tb, int m, int n, int k, float beta,
          float alpha = 1.f) {
  cpu::sgemm(ta, tb, m, n, k, alpha, a, std::max(1, ta ? m : k), b, std::max(1, tb ? k : n), beta, c, std::max(1, n));
}
void gemm(const double* a, const double* b, double* c, bool ta, bool tb, int m, int n, int k, float beta,
          float alpha = 1.f) {
  cpu::dgemm(ta, tb, m, n, k, double(alpha), a, std::max(1, ta ? m : k), b, std::max(1, tb ? k : n), beta, c,
             std::max(1, n));
}

/// The epilogue on one expert's rows [rows, m] of out: v = act(alpha v + bias), in the order the
/// separate scale, bias add and relu ops used (so results equal theirs).
template <class T>
void epilogue(T* o, int64_t rows, int64_t m, T alpha, const T* bias, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    T* row = o + r * m;
    if (alpha != T(1))
      for (int64_t j = 0; j < m; ++j) row[j] = row[j] * alpha;
    if (bias)
      for (int64_t j = 0; j < m; ++j) row[j] = row[j] + bias[j];
    if (relu)
      for (int64_t j = 0; j < m; ++j) row[j] = row[j] > T(0) ? row[j] : T(0);
  }
}

template <class T>
void forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w, bool accumulate,
             float alpha, const Tensor& bias, GroupedActivation act) {
  const int64_t k = x.shape()[1], m = out.shape()[1];
  const std::vector<int32_t> off = host_offsets(offsets, x.shape()[0]);
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  T* po = out.data<T>();
  const T* pb = bias.defined() ? bias.data<T>() : nullptr;
  const bool relu = act == GroupedActivation::relu;
  // accumulate takes alpha into the GEMM (out += alpha x w); otherwise the epilogue applies it
  const float gemm_alpha = accumulate ? alpha : 1.f;
  const Int8Matrix* q = std::is_same_v<T, float> && !trans_w && gemm_alpha == 1.f ? active_int8_weight(w) : nullptr;
  // experts in parallel (common/cpu_threads.h), each GEMM single-threaded: the blocks of out are disjoint
  parallel_for(int64_t(off.size()) - 1, 1, [&](int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t r0 = off[e], rows = off[e + 1] - off[e];
      if (rows == 0 || m == 0) continue;
      if (k == 0) {
        if (!accumulate) std::fill(po + r0 * m, po + (r0 + rows) * m, T(0));
      } else if (q) {  // a quantized expert weight (ops/int8_gemm.h)
        cpu::int8_matmul(reinterpret_cast<const float*>(px + r0 * k), rows, *q, e,
                         reinterpret_cast<float*>(po + r0 * m), accumulate);
      } else {
        gemm(px + r0 * k, pw + int64_t(e) * k * m, po + r0 * m, false, trans_w, int(rows), int(m), int(k),
             accumulate ? 1.f : 0.f, gemm_alpha);
      }
      if (!accumulate) epilogue(po + r0 * m, rows, m, T(alpha), pb ? pb + e * m : nullptr, relu);
    }
  });
}

// dw[e] += x_e^T @ dout_e ([K, M]) or, with trans_w, dout_e^T @ x_e ([M, K]).
template <class T>
void weight_grad(const Tensor& x, const Tensor& dout, const Tensor& offsets, Tensor& dw, bool trans_w, float alpha) {
  const int64_t k = x.shape()[1], m = dout.shape()[1];
  const std::vector<int32_t> off = host_offsets(offsets, x.shape()[0]);
  const T* px = x.data<T>();
  const T* pd = dout.data<T>();
  T* pw = dw.data<T>();
  parallel_for(int64_t(off.size()) - 1, 1, [&](int64_t e0, int64_t e1) {  // experts in parallel, as forward
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t r0 = off[e], rows = off[e + 1] - off[e];
      if (rows == 0 || k == 0 || m == 0) continue;
      T* dwe = pw + int64_t(e) * k * m;
      if (trans_w)
        gemm(pd + r0 * m, px + r0 * k, dwe, true, false, int(m), int(k), int(rows), 1.f, alpha);
      else
        gemm(px + r0 * k, pd + r0 * m, dwe, true, false, int(k), int(m), int(rows), 1.f, alpha);
    }
  });
}

// dz = dout * (out > 0) with relu; dbias[e] += sum over e's rows of dz (rows in order, as index_add did).
/// z = d where o > 0, else 0: a select the compiler vectorises (a branch per element mispredicts on the
/// signs of activations).
template <class T>
void relu_grad(const T* __restrict o, const T* __restrict d, T* __restrict z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = d[i];  // loaded unconditionally, so the loop vectorises
    z[i] = o[i] > T(0) ? v : T(0);
  }
}

/// b[j] += sum over the rows of g [rows, m] of g[r, j], for j in [j0, j1), the rows in order.
template <class T>
void column_sums(const T* __restrict g, int64_t rows, int64_t m, int64_t j0, int64_t j1, T* __restrict b) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = j0; j < j1; ++j) b[j] += g[r * m + j];
}

// dz = dout * (out > 0) with relu; dbias[e] += sum over e's rows of dz (rows in order, as index_add did).
template <class T>
void epilogue_grad(const Tensor& out, const Tensor& dout, const Tensor& offsets, GroupedActivation act, Tensor& dz,
                   Tensor& dbias) {
  const int64_t n = dout.shape()[0], m = dout.shape()[1];
  const std::vector<int32_t> off = host_offsets(offsets, n);
  const T* po = out.data<T>();
  const T* pd = dout.data<T>();
  T* pz = act == GroupedActivation::relu ? dz.data<T>() : nullptr;
  if (pz)
    parallel_for(n * m, kElementsPerThread,
                 [&](int64_t i0, int64_t i1) { relu_grad(po + i0, pd + i0, pz + i0, i1 - i0); });
  if (!dbias.defined()) return;
  const T* g = pz ? pz : pd;
  T* pb = dbias.data<T>();
  // Threads own column ranges, so skewed experts still split.
  parallel_for(m, 16, [&](int64_t j0, int64_t j1) {
    for (size_t e = 0; e + 1 < off.size(); ++e)
      column_sums(g + int64_t(off[e]) * m, int64_t(off[e + 1] - off[e]), m, j0, j1, pb + int64_t(e) * m);
  });
}

void check_args(const char* what, const Tensor& x, const Tensor& w, const Tensor& offsets, bool trans_w) {
  MOE_CHECK(x.shape().ndim() == 2, "grouped_gemm", what, ": x must be [rows, K], got ", x.shape());
  MOE_CHECK(w.shape().ndim() == 3, "grouped_gemm", what, ": w must be [E, K, M] (or [E, M, K] with trans_w), got ",
            w.shape());
  const int64_t wk = trans_w ? w.shape()[2] : w.shape()[1];
  MOE_CHECK(wk == x.shape()[1], "grouped_gemm", what, ": x ", x.shape(), " does not match w ", w.shape(),
            trans_w ? " (trans_w)" : "");
  MOE_CHECK(offsets.dtype() == DType::i32 && offsets.shape() == Shape{w.shape()[0] + 1}, "grouped_gemm", what,
            ": offsets must be i32 [E+1] = [", w.shape()[0] + 1, "], got ", dtype_name(offsets.dtype()), " ",
            offsets.shape());
  check_same_device("grouped_gemm", x, w, offsets);
  check_dtype("grouped_gemm", "w", w, x.dtype());
}
}  // namespace

namespace cpu {
void grouped_gemm_forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w,
                          bool accumulate, float alpha, const Tensor& bias, GroupedActivation act) {
  check_cpu_float("grouped_gemm", x);
  if (x.dtype() == DType::f64)
    forward<double>(x, w, offsets, out, trans_w, accumulate, alpha, bias, act);
  else
    forward<float>(x, w, offsets, out, trans_w, accumulate, alpha, bias, act);
}
void grouped_gemm_weight_grad(const Tensor& x, const Tensor& dout, const Tensor& offsets, Tensor& dw, bool trans_w,
                              float alpha) {
  check_cpu_float("grouped_gemm", x);
  if (x.dtype() == DType::f64)
    weight_grad<double>(x, dout, offsets, dw, trans_w, alpha);
  else
    weight_grad<float>(x, dout, offsets, dw, trans_w, alpha);
}
void grouped_gemm_epilogue_grad(const Tensor& out, const Tensor& dout, const Tensor& offsets, GroupedActivation act,
                                Tensor& dz, Tensor& dbias) {
  check_cpu_float("grouped_gemm", dout);
  if (dout.dtype() == DType::f64)
    epilogue_grad<double>(out, dout, offsets, act, dz, dbias);
  else
    epilogue_grad<float>(out, dout, offsets, act, dz, dbias);
}
}  // namespace cpu

void grouped_gemm_forward(const Tensor& x, const Tensor& w, const Tensor& offsets, Tensor& out, bool trans_w,
                          bool accumulate, const GroupedEpilogue& epilogue) {
  check_args("", x, w, offsets, trans_w);
  const int64_t m = trans_w ? w.shape()[1] : w.shape()[2];
  check_same_device("grouped_gemm", x, out);
  check_dtype("grouped_gemm", "output", out, x.dtype());
  check_shape("grouped_gemm", "output", out, Shape{x.shape()[0], m});
  MOE_CHECK(!accumulate || (!epilogue.bias.defined() && epilogue.act == GroupedActivation::none),
            "grouped_gemm: accumulate takes alpha only, not a bias or an activation (output ", out.shape(), ")");
  if (epilogue.bias.defined()) {
    check_same_device("grouped_gemm", x, epilogue.bias);
    check_dtype("grouped_gemm", "bias", epilogue.bias, x.dtype());
    check_shape("grouped_gemm", "bias", epilogue.bias, Shape{w.shape()[0], m});
  }
  MOE_DISPATCH(x, grouped_gemm_forward, x, w, offsets, out, trans_w, accumulate, epilogue.alpha, epilogue.bias,
               epilogue.act);
}

void grouped_gemm_backward(const Tensor& x, const Tensor& w, const Tensor& offsets, const Tensor& dout, Tensor& dx,
                           Tensor& dw, bool trans_w, float alpha) {
  check_args(" backward", x, w, offsets, trans_w);
  const int64_t m = trans_w ? w.shape()[1] : w.shape()[2];
  check_same_device("grouped_gemm", x, dout, dx, dw);
  check_dtype("grouped_gemm", "output gradient", dout, x.dtype());
  check_shape("grouped_gemm", "output gradient", dout, Shape{x.shape()[0], m});
  if (dx.defined()) {
    check_dtype("grouped_gemm", "x gradient", dx, x.dtype());
    check_shape("grouped_gemm", "x gradient", dx, x.shape());
    // dx_e += dout_e @ op(w_e)^T: the forward product with w's transposition flipped.
    MOE_DISPATCH(x, grouped_gemm_forward, dout, w, offsets, dx, !trans_w, true, alpha, Tensor(),
                 GroupedActivation::none);
  }
  if (dw.defined()) {
    check_dtype("grouped_gemm", "w gradient", dw, x.dtype());
    check_shape("grouped_gemm", "w gradient", dw, w.shape());
    MOE_DISPATCH(x, grouped_gemm_weight_grad, x, dout, offsets, dw, trans_w, alpha);
  }
}

void grouped_gemm_epilogue_backward(const Tensor& out, const Tensor& dout, const Tensor& offsets, GroupedActivation act,
                                    Tensor& dz, Tensor& dbias) {
  MOE_CHECK(dout.shape().ndim() == 2, "grouped_gemm epilogue backward: dout must be [rows, M], got ", dout.shape());
  const int64_t m = dout.shape()[1];
  MOE_CHECK(offsets.dtype() == DType::i32 && offsets.shape().ndim() == 1 && offsets.shape()[0] >= 1,
            "grouped_gemm epilogue backward: offsets must be i32 [E+1], got ", dtype_name(offsets.dtype()), " ",
            offsets.shape());
  const int64_t experts = offsets.shape()[0] - 1;
  check_same_device("grouped_gemm", dout, offsets);
  const bool relu = act == GroupedActivation::relu;
  MOE_CHECK(relu == dz.defined(), "grouped_gemm epilogue backward: dz must be given exactly when act is relu");
  if (relu) {
    check_same_device("grouped_gemm", dout, out, dz);
    check_dtype("grouped_gemm", "output", out, dout.dtype());
    check_shape("grouped_gemm", "output", out, dout.shape());
    check_dtype("grouped_gemm", "masked gradient", dz, dout.dtype());
    check_shape("grouped_gemm", "masked gradient", dz, dout.shape());
  }
  if (dbias.defined()) {
    check_same_device("grouped_gemm", dout, dbias);
    check_dtype("grouped_gemm", "bias gradient", dbias, dout.dtype());
    check_shape("grouped_gemm", "bias gradient", dbias, Shape{experts, m});
  }
  if (!relu && !dbias.defined()) return;
  MOE_DISPATCH(dout, grouped_gemm_epilogue_grad, out, dout, offsets, act, dz, dbias);
}

}  // namespace moe
