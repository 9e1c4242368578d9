// Shape: up to 8 dimensions of a contiguous, row-major tensor. Negative axes count from the end.
// Covered by tests/unit/tensor_test.cpp ("shape").
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace moe {

class Shape {
 public:
  static constexpr int kMaxDims = 8;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  int ndim() const { return ndim_; }
  int64_t numel() const;
  /// Size of axis i; i may be negative (-1 = last).
  int64_t operator[](int i) const { return dims_[axis(i)]; }
  int64_t& operator[](int i) { return dims_[axis(i)]; }
  /// Normalises a possibly negative axis and checks it is in range.
  int axis(int i) const;
  /// Product of the sizes before / after an axis (the "outer" and "inner" extents of a reduction).
  int64_t outer(int axis) const;
  int64_t inner(int axis) const;
  int64_t last() const { return ndim_ ? dims_[ndim_ - 1] : 1; }
  /// All but the last axis, flattened: the number of rows of a row-wise op.
  int64_t rows() const { return ndim_ ? numel() / (last() ? last() : 1) : 1; }
  std::vector<int64_t> vec() const { return {dims_.begin(), dims_.begin() + ndim_}; }
  Shape with(int axis, int64_t size) const;
  std::string str() const;

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  std::array<int64_t, kMaxDims> dims_{};
  int ndim_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

/// Broadcast shape of two shapes (numpy rules); throws naming both shapes and `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace moe
