// Expression operators for the broadcasting binary ops (graph nodes over lib/ops/binary.h), the
// arithmetic operators on Exprs and scalar shorthands (through the unary `scale` op).
// Covered by tests/ops/binary_test.cpp.
#pragma once
#include "graph/graph.h"
#include "ops/binary.h"

namespace moe {

/// op(a, b) with numpy broadcasting; a and b must have the same dtype.
Expr binary(BinaryOp op, const Expr& a, const Expr& b);
inline Expr add(const Expr& a, const Expr& b) { return binary(BinaryOp::add, a, b); }
inline Expr sub(const Expr& a, const Expr& b) { return binary(BinaryOp::sub, a, b); }
inline Expr mul(const Expr& a, const Expr& b) { return binary(BinaryOp::mul, a, b); }
inline Expr div(const Expr& a, const Expr& b) { return binary(BinaryOp::div, a, b); }
inline Expr maximum(const Expr& a, const Expr& b) { return binary(BinaryOp::maximum, a, b); }
inline Expr minimum(const Expr& a, const Expr& b) { return binary(BinaryOp::minimum, a, b); }
inline Expr operator+(const Expr& a, const Expr& b) { return add(a, b); }
inline Expr operator-(const Expr& a, const Expr& b) { return sub(a, b); }
inline Expr operator*(const Expr& a, const Expr& b) { return mul(a, b); }
inline Expr operator/(const Expr& a, const Expr& b) { return div(a, b); }

/// x + c and x * c for a plain scalar c.
Expr add_scalar(const Expr& x, float c);
Expr mul_scalar(const Expr& x, float c);

}  // namespace moe
