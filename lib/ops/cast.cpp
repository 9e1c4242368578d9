// CPU reference of the dtype casts (see cast.h) and their dispatch. Every value goes through
// double: exact for f32/f64/bf16/f16/i32, and each store rounds once to the target type.
#include "ops/cast.h"

#include <cmath>
#include <cstdint>

#include "ops/dispatch.h"

namespace moe {

namespace cpu {
namespace {
template <class T>
double load(const void* p, int64_t i) {
  const T v = static_cast<const T*>(p)[i];
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>)
    return static_cast<float>(v);
  else
    return static_cast<double>(v);
}

int32_t to_i32(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return static_cast<int32_t>(v);  // truncation toward zero
}

double load_any(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::f32:
      return load<float>(t.raw(), i);
    case DType::f64:
      return load<double>(t.raw(), i);
    case DType::bf16:
      return load<bf16>(t.raw(), i);
    case DType::f16:
      return load<f16>(t.raw(), i);
    case DType::i32:
      return load<int32_t>(t.raw(), i);
    case DType::u8:
      return load<uint8_t>(t.raw(), i);
    default:
      MOE_FAIL("cast: unsupported source dtype ", dtype_name(t.dtype()));
  }
}

void store_any(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DType::f32:
      static_cast<float*>(t.raw())[i] = static_cast<float>(v);
      break;
    case DType::f64:
      static_cast<double*>(t.raw())[i] = v;
      break;
    // bf16/f16 round from f32 (as on the GPU); f64 -> f32 -> bf16 may double-round in rare ties.
    case DType::bf16:
      static_cast<bf16*>(t.raw())[i] = bf16(static_cast<float>(v));
      break;
    case DType::f16:
      static_cast<f16*>(t.raw())[i] = f16(static_cast<float>(v));
      break;
    case DType::i32:
      static_cast<int32_t*>(t.raw())[i] = to_i32(v);
      break;
    default:
      MOE_FAIL("cast: unsupported target dtype ", dtype_name(t.dtype()));
  }
}
}  // namespace

void cast_forward(const Tensor& x, Tensor& out, bool accumulate) {
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    double v = load_any(x, i);
    if (out.dtype() != DType::i32 && accumulate) v = load_any(out, i) + v;
    store_any(out, i, v);
  }
}
}  // namespace cpu

namespace {
bool castable(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::bf16 || t == DType::f16 || t == DType::i32;
}

void check_cast(const char* name, const Tensor& x, const Tensor& out) {
  MOE_CHECK(x.defined() && out.defined(), name, ": undefined tensor");
  check_same_device(name, x, out);
  MOE_CHECK(x.shape() == out.shape(), name, ": input ", x.shape(), " and output ", out.shape(), " differ in shape");
  const bool mask = x.dtype() == DType::u8 && is_floating(out.dtype());
  MOE_CHECK((castable(x.dtype()) || mask) && castable(out.dtype()), name, ": cannot cast ", dtype_name(x.dtype()),
            " to ", dtype_name(out.dtype()), " (supported: f32, f64, bf16, f16, i32, and u8 to the floating types)");
  if (x.device().is_cuda()) {
    const bool ints = x.dtype() == DType::i32 || out.dtype() == DType::i32;
    MOE_CHECK(x.dtype() != DType::f64 && out.dtype() != DType::f64 &&
                  (!ints || x.dtype() == out.dtype() || x.dtype() == DType::f32 || out.dtype() == DType::f32),
              name, ": the CUDA kernel casts between f32, bf16, f16, between i32 and f32, and u8 to those three, not ",
              dtype_name(x.dtype()), " to ", dtype_name(out.dtype()), " (shape ", x.shape(), ")");
  }
}
}  // namespace

void cast_forward(const Tensor& x, Tensor& out) {
  check_cast("cast", x, out);
  if (x.numel() == 0) return;
  if (x.dtype() == out.dtype()) {
    if (!x.shares_storage(out) || x.raw() != out.raw()) out.copy_from(x);
    return;
  }
  MOE_DISPATCH(x, cast_forward, x, out, false);
}

void cast_backward(const Tensor& dy, Tensor& dx) {
  check_cast("cast backward", dy, dx);
  MOE_CHECK(is_floating(dy.dtype()) && is_floating(dx.dtype()), "cast backward: integer tensors take no gradient (",
            dtype_name(dy.dtype()), " to ", dtype_name(dx.dtype()), ")");
  if (dy.numel() == 0) return;
  MOE_DISPATCH(dy, cast_forward, dy, dx, true);
}

}  // namespace moe
