// Expression operators for element-wise unary functions (graph nodes over lib/ops/unary.h).
// Covered by tests/ops/unary_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/unary.h"

namespace moe {

Expr unary(UnaryOp op, const Expr& x, float alpha = 1.f, float beta = 0.f);
inline Expr relu(const Expr& x) { return unary(UnaryOp::relu, x); }
inline Expr gelu(const Expr& x) { return unary(UnaryOp::gelu, x); }
inline Expr tanh(const Expr& x) { return unary(UnaryOp::tanh, x); }
inline Expr sigmoid(const Expr& x) { return unary(UnaryOp::sigmoid, x); }
inline Expr softplus(const Expr& x) { return unary(UnaryOp::softplus, x); }
inline Expr exp(const Expr& x) { return unary(UnaryOp::exp, x); }
inline Expr log(const Expr& x) { return unary(UnaryOp::log, x); }
inline Expr sqrt(const Expr& x) { return unary(UnaryOp::sqrt, x); }
inline Expr erf(const Expr& x) { return unary(UnaryOp::erf, x); }
inline Expr normcdf(const Expr& x) { return unary(UnaryOp::normcdf, x); }
inline Expr neg(const Expr& x) { return unary(UnaryOp::neg, x); }
inline Expr square(const Expr& x) { return unary(UnaryOp::square, x); }
inline Expr abs(const Expr& x) { return unary(UnaryOp::abs, x); }
/// alpha * x + beta
inline Expr scale(const Expr& x, float alpha, float beta = 0.f) { return unary(UnaryOp::scale, x, alpha, beta); }

}  // namespace moe
