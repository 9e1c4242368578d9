// CPU reference of the fused LSTM cell (see lstm_cell.h) and the argument checks / dispatch.
#include "ops/lstm_cell.h"

#include "ops/dispatch.h"
#include "ops/lstm_cell_math.h"

namespace moe {

namespace cpu {
namespace {
template <class T>
void state_fwd(const Tensor& gates, const Tensor& c_prev, Tensor& c) {
  const int64_t H = c.shape()[1], B = c.shape()[0];
  const T* g = gates.data<T>();
  const T* cp = c_prev.defined() ? c_prev.data<T>() : nullptr;
  T* out = c.data<T>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      const T* row = g + b * 4 * H;
      out[b * H + j] = lstm_state<T>(row[j], row[H + j], row[3 * H + j], cp ? cp[b * H + j] : T(0));
    }
}
template <class T>
void state_bwd(const Tensor& gates, const Tensor& c_prev, const Tensor& dc, Tensor& dgates, Tensor& dc_prev) {
  const int64_t H = dc.shape()[1], B = dc.shape()[0];
  const T *g = gates.data<T>(), *d = dc.data<T>();
  const T* cp = c_prev.defined() ? c_prev.data<T>() : nullptr;
  T* dg = dgates.defined() ? dgates.data<T>() : nullptr;
  T* dcp = dc_prev.defined() ? dc_prev.data<T>() : nullptr;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      const T* row = g + b * 4 * H;
      T di, df, dgg, dp;
      lstm_state_grad<T>(row[j], row[H + j], row[3 * H + j], cp ? cp[b * H + j] : T(0), d[b * H + j], &di, &df, &dgg,
                         &dp);
      if (dg) {
        dg[b * 4 * H + j] += di;
        dg[b * 4 * H + H + j] += df;
        dg[b * 4 * H + 3 * H + j] += dgg;
      }
      if (dcp) dcp[b * H + j] += dp;
    }
}
template <class T>
void output_fwd(const Tensor& gates, const Tensor& c, Tensor& h) {
  const int64_t H = c.shape()[1], B = c.shape()[0];
  const T *g = gates.data<T>(), *pc = c.data<T>();
  T* out = h.data<T>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) out[b * H + j] = lstm_output<T>(g[b * 4 * H + 2 * H + j], pc[b * H + j]);
}
template <class T>
void output_bwd(const Tensor& gates, const Tensor& c, const Tensor& dh, Tensor& dgates, Tensor& dc) {
  const int64_t H = c.shape()[1], B = c.shape()[0];
  const T *g = gates.data<T>(), *pc = c.data<T>(), *d = dh.data<T>();
  T* dg = dgates.defined() ? dgates.data<T>() : nullptr;
  T* pdc = dc.defined() ? dc.data<T>() : nullptr;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      T dgo, dcc;
      lstm_output_grad<T>(g[b * 4 * H + 2 * H + j], pc[b * H + j], d[b * H + j], &dgo, &dcc);
      if (dg) dg[b * 4 * H + 2 * H + j] += dgo;
      if (pdc) pdc[b * H + j] += dcc;
    }
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
