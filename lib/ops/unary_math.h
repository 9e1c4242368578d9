// The scalar math of every UnaryOp, shared by the CPU reference (unary.cpp) and the CUDA kernel
// (cuda/ops/unary.cu) so both compute exactly the same formulas. T is float or double.
#pragma once
#include <cmath>

#include "ops/unary.h"
#include "tensor/philox.h"  // MOE_HD

namespace moe {

template <class T>
MOE_HD T unary_value(UnaryOp op, T x, T alpha, T beta) {
  constexpr T kInvSqrt2 = T(0.70710678118654752440);
  switch (op) {
    case UnaryOp::relu: return x > T(0) ? x : T(0);
    case UnaryOp::gelu: return x * T(0.5) * (T(1) + erf(x * kInvSqrt2));
    case UnaryOp::tanh: return tanh(x);
    case UnaryOp::sigmoid: return T(1) / (T(1) + exp(-x));
    case UnaryOp::softplus: return x > T(20) ? x : log1p(exp(x));
    case UnaryOp::exp: return exp(x);
    case UnaryOp::log: return log(x);
    case UnaryOp::sqrt: return sqrt(x);
    case UnaryOp::erf: return erf(x);
    case UnaryOp::normcdf: return T(0.5) * (T(1) + erf(x * kInvSqrt2));
    case UnaryOp::neg: return -x;
    case UnaryOp::square: return x * x;
    case UnaryOp::abs: return x < T(0) ? -x : x;
    case UnaryOp::scale: return alpha * x + beta;
  }
  return x;
}

/// f'(x) given x and y = f(x).
template <class T>
MOE_HD T unary_derivative(UnaryOp op, T x, T y, T alpha) {
  constexpr T kInvSqrt2 = T(0.70710678118654752440);
  constexpr T kInvSqrt2Pi = T(0.39894228040143267794);
  switch (op) {
    case UnaryOp::relu: return x > T(0) ? T(1) : T(0);
    case UnaryOp::gelu: return T(0.5) * (T(1) + erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * exp(T(-0.5) * x * x);
    case UnaryOp::tanh: return T(1) - y * y;
    case UnaryOp::sigmoid: return y * (T(1) - y);
    case UnaryOp::softplus: return T(1) / (T(1) + exp(-x));
    case UnaryOp::exp: return y;
    case UnaryOp::log: return T(1) / x;
    case UnaryOp::sqrt: return T(0.5) / y;
    case UnaryOp::erf: return T(1.12837916709551257390) * exp(-x * x);
    case UnaryOp::normcdf: return kInvSqrt2Pi * exp(T(-0.5) * x * x);
    case UnaryOp::neg: return T(-1);
    case UnaryOp::square: return T(2) * x;
    case UnaryOp::abs: return x < T(0) ? T(-1) : (x > T(0) ? T(1) : T(0));
    case UnaryOp::scale: return alpha;
  }
  return T(0);
}

}  // namespace moe
