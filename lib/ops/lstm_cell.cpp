// CPU reference of the fused LSTM cell (see lstm_cell.h) and the argument checks / dispatch. The batch rows
// go over the threads, each row's loop vectorised; f32 uses cpu_math.h's sigmoid_fast / tanh_fast (a few
// ulp from the library's exp and tanh, which f64 keeps for the finite-difference checks).
// Covered by tests/ops/lstm_cell_test.cpp.
#include "ops/lstm_cell.h"

#include <algorithm>
#include <type_traits>

#include "common/cpu_threads.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"
#include "ops/dispatch.h"
#include "ops/lstm_cell_math.h"

namespace moe {

namespace cpu {
namespace {
/// The f32 activations by exp_fast (vectorisable, a few ulp from the library's); f64 keeps the library's.
struct FastActivations {
  static float sigmoid(float x) { return sigmoid_fast(x); }
  static float tanh_of(float x) { return tanh_fast(x); }
};
template <class T>
using Activations = std::conditional_t<std::is_same_v<T, float>, FastActivations, LstmActivations>;

/// fn(b) for each batch row b, rows over the threads (run_wide: the row loops below vectorise 8 wide on AVX2).
template <class F>
void for_rows(int64_t B, int64_t H, const F& fn) {
  parallel_for(B, std::max<int64_t>(1, kElementsPerThread / std::max<int64_t>(1, 4 * H)), [&](int64_t b0, int64_t b1) {
    run_wide([&] {
      for (int64_t b = b0; b < b1; ++b) fn(b);
    });
  });
}

// One batch row of each op, n units; the gates' slices and every other operand as separate restrict
// parameters, so the loops vectorise. A null c_prev is zero; a null output is not wanted.
template <class T, class A>
void state_fwd_row(const T* __restrict gi, const T* __restrict gf, const T* __restrict gg, const T* __restrict cp,
                   T* __restrict c, int64_t n) {
  if (cp)
    for (int64_t j = 0; j < n; ++j) c[j] = lstm_state<T, A>(gi[j], gf[j], gg[j], cp[j]);
  else
    for (int64_t j = 0; j < n; ++j) c[j] = lstm_state<T, A>(gi[j], gf[j], gg[j], T(0));
}
template <class T, class A>
void state_bwd_row(const T* __restrict gi, const T* __restrict gf, const T* __restrict gg, const T* __restrict cp,
                   const T* __restrict dc, T* __restrict dgi, T* __restrict dgf, T* __restrict dgg, T* __restrict dcp,
                   int64_t n) {
  if (cp && dgi && dcp) {  // the usual case, without conditions in the loop
    for (int64_t j = 0; j < n; ++j) {
      T di, df, dg, dp;
      lstm_state_grad<T, A>(gi[j], gf[j], gg[j], cp[j], dc[j], &di, &df, &dg, &dp);
      dgi[j] += di, dgf[j] += df, dgg[j] += dg, dcp[j] += dp;
    }
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    T di, df, dg, dp;
    lstm_state_grad<T, A>(gi[j], gf[j], gg[j], cp ? cp[j] : T(0), dc[j], &di, &df, &dg, &dp);
    if (dgi) dgi[j] += di, dgf[j] += df, dgg[j] += dg;
    if (dcp) dcp[j] += dp;
  }
}
template <class T, class A>
void output_fwd_row(const T* __restrict go, const T* __restrict c, T* __restrict h, int64_t n) {
  for (int64_t j = 0; j < n; ++j) h[j] = lstm_output<T, A>(go[j], c[j]);
}
template <class T, class A>
void output_bwd_row(const T* __restrict go, const T* __restrict c, const T* __restrict dh, T* __restrict dgo,
                    T* __restrict dc, int64_t n) {
  if (dgo && dc) {
    for (int64_t j = 0; j < n; ++j) {
      T g, d;
      lstm_output_grad<T, A>(go[j], c[j], dh[j], &g, &d);
      dgo[j] += g, dc[j] += d;
    }
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    T g, d;
    lstm_output_grad<T, A>(go[j], c[j], dh[j], &g, &d);
    if (dgo) dgo[j] += g;
    if (dc) dc[j] += d;
  }
}

/// p + offset, or null when p is.
template <class T>
T* at(T* p, int64_t offset) {
  return p ? p + offset : nullptr;
}

// gates [B, 4H] hold the i, f, o and g pre-activations of each row side by side.
template <class T>
void state_fwd(const Tensor& gates, const Tensor& c_prev, Tensor& c) {
  const int64_t H = c.shape()[1], B = c.shape()[0];
  const T* g = gates.data<T>();
  const T* cp = c_prev.defined() ? c_prev.data<T>() : nullptr;
  T* out = c.data<T>();
  for_rows(B, H, [&](int64_t b) {
    const T* row = g + b * 4 * H;
    state_fwd_row<T, Activations<T>>(row, row + H, row + 3 * H, at(cp, b * H), out + b * H, H);
  });
}
template <class T>
void state_bwd(const Tensor& gates, const Tensor& c_prev, const Tensor& dc, Tensor& dgates, Tensor& dc_prev) {
  const int64_t H = dc.shape()[1], B = dc.shape()[0];
  const T *g = gates.data<T>(), *d = dc.data<T>();
  const T* cp = c_prev.defined() ? c_prev.data<T>() : nullptr;
  T* dg = dgates.defined() ? dgates.data<T>() : nullptr;
  T* dcp = dc_prev.defined() ? dc_prev.data<T>() : nullptr;
  for_rows(B, H, [&](int64_t b) {
    const T* row = g + b * 4 * H;
    T* drow = at(dg, b * 4 * H);
    state_bwd_row<T, Activations<T>>(row, row + H, row + 3 * H, at(cp, b * H), d + b * H, drow, at(drow, H),
                                     at(drow, 3 * H), at(dcp, b * H), H);
  });
}
template <class T>
void output_fwd(const Tensor& gates, const Tensor& c, Tensor& h) {
  const int64_t H = c.shape()[1], B = c.shape()[0];
  const T *g = gates.data<T>(), *pc = c.data<T>();
  T* out = h.data<T>();
  for_rows(B, H,
           [&](int64_t b) { output_fwd_row<T, Activations<T>>(g + b * 4 * H + 2 * H, pc + b * H, out + b * H, H); });
}
template <class T>
void output_bwd(const Tensor& gates, const Tensor& c, const Tensor& dh, Tensor& dgates, Tensor& dc) {
  const int64_t H = c.shape()[1], B = c.shape()[0];
  const T *g = gates.data<T>(), *pc = c.data<T>(), *d = dh.data<T>();
  T* dg = dgates.defined() ? dgates.data<T>() : nullptr;
  T* pdc = dc.defined() ? dc.data<T>() : nullptr;
  for_rows(B, H, [&](int64_t b) {
    output_bwd_row<T, Activations<T>>(g + b * 4 * H + 2 * H, pc + b * H, d + b * H, at(dg, b * 4 * H + 2 * H),
                                      at(pdc, b * H), H);
  });
}
}  // namespace

void lstm_cell_state_forward(const Tensor& gates, const Tensor& c_prev, Tensor& c) {
  check_cpu_float("lstm_cell", gates);
  if (gates.dtype() == DType::f64)
    state_fwd<double>(gates, c_prev, c);
  else
    state_fwd<float>(gates, c_prev, c);
}
void lstm_cell_state_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& dc, Tensor& dgates,
                              Tensor& dc_prev) {
  check_cpu_float("lstm_cell", gates);
  if (gates.dtype() == DType::f64)
    state_bwd<double>(gates, c_prev, dc, dgates, dc_prev);
  else
    state_bwd<float>(gates, c_prev, dc, dgates, dc_prev);
}
void lstm_cell_output_forward(const Tensor& gates, const Tensor& c, Tensor& h) {
  check_cpu_float("lstm_cell", gates);
  if (gates.dtype() == DType::f64)
    output_fwd<double>(gates, c, h);
  else
    output_fwd<float>(gates, c, h);
}
void lstm_cell_output_backward(const Tensor& gates, const Tensor& c, const Tensor& dh, Tensor& dgates, Tensor& dc) {
  check_cpu_float("lstm_cell", gates);
  if (gates.dtype() == DType::f64)
    output_bwd<double>(gates, c, dh, dgates, dc);
  else
    output_bwd<float>(gates, c, dh, dgates, dc);
}
}  // namespace cpu

namespace {
/// gates [B, 4H] and every defined [B, H] tensor of the same dtype and device.
void check_cell(const char* op, const Tensor& gates, std::initializer_list<std::pair<const char*, const Tensor*>> s) {
  MOE_CHECK(gates.shape().ndim() == 2 && gates.shape()[1] % 4 == 0, op, ": gates must be [B, 4H], not ", gates.shape());
  const Shape state{gates.shape()[0], gates.shape()[1] / 4};
  for (const auto& [what, t] : s) {
    if (!t->defined()) continue;
    check_same_device(op, gates, *t);
    check_shape(op, what, *t, state);
    check_dtype(op, what, *t, gates.dtype());
  }
}
/// dgates, when wanted, like gates (the CUDA kernels write it through the gates' element type).
void check_gates_grad(const char* op, const Tensor& gates, const Tensor& dgates) {
  if (!dgates.defined()) return;
  check_same_device(op, gates, dgates);
  check_shape(op, "dgates", dgates, gates.shape());
  check_dtype(op, "dgates", dgates, gates.dtype());
}
}  // namespace

void lstm_cell_state_forward(const Tensor& gates, const Tensor& c_prev, Tensor& c) {
  check_cell("lstm_cell_state", gates, {{"c_prev", &c_prev}, {"c", &c}});
  MOE_CHECK(c.defined(), "lstm_cell_state: the output c is undefined");
  MOE_DISPATCH(gates, lstm_cell_state_forward, gates, c_prev, c);
}

void lstm_cell_state_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& dc, Tensor& dgates,
                              Tensor& dc_prev) {
  check_cell("lstm_cell_state backward", gates, {{"c_prev", &c_prev}, {"dc", &dc}, {"dc_prev", &dc_prev}});
  MOE_CHECK(dc.defined(), "lstm_cell_state backward: the output gradient dc is undefined");
  check_gates_grad("lstm_cell_state backward", gates, dgates);
  MOE_CHECK(!dc_prev.defined() || c_prev.defined(), "lstm_cell_state backward: dc_prev without c_prev");
  MOE_DISPATCH(gates, lstm_cell_state_backward, gates, c_prev, dc, dgates, dc_prev);
}

void lstm_cell_output_forward(const Tensor& gates, const Tensor& c, Tensor& h) {
  check_cell("lstm_cell_output", gates, {{"c", &c}, {"h", &h}});
  MOE_CHECK(c.defined() && h.defined(), "lstm_cell_output: c and h must be defined");
  MOE_DISPATCH(gates, lstm_cell_output_forward, gates, c, h);
}

void lstm_cell_output_backward(const Tensor& gates, const Tensor& c, const Tensor& dh, Tensor& dgates, Tensor& dc) {
  check_cell("lstm_cell_output backward", gates, {{"c", &c}, {"dh", &dh}, {"dc", &dc}});
  MOE_CHECK(c.defined() && dh.defined(), "lstm_cell_output backward: c and the output gradient dh must be defined");
  check_gates_grad("lstm_cell_output backward", gates, dgates);
  MOE_DISPATCH(gates, lstm_cell_output_backward, gates, c, dh, dgates, dc);
}

}  // namespace moe
