// shape.h implementation.
#include "tensor/shape.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"

namespace moe {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

Shape::Shape(const std::vector<int64_t>& dims) {
  MOE_CHECK(dims.size() <= kMaxDims, "shape has ", dims.size(), " dimensions; at most ", kMaxDims, " are supported");
  for (size_t i = 0; i < dims.size(); ++i) {
    MOE_CHECK(dims[i] >= 0, "negative dimension ", dims[i], " in shape");
    dims_[i] = dims[i];
  }
  ndim_ = static_cast<int>(dims.size());
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= dims_[i];
  return n;
}

int Shape::axis(int i) const {
  const int a = i < 0 ? i + ndim_ : i;
  MOE_CHECK(a >= 0 && a < ndim_, "axis ", i, " out of range for shape ", str());
  return a;
}

int64_t Shape::outer(int ax) const {
  int64_t n = 1;
  for (int i = 0; i < axis(ax); ++i) n *= dims_[i];
  return n;
}

int64_t Shape::inner(int ax) const {
  int64_t n = 1;
  for (int i = axis(ax) + 1; i < ndim_; ++i) n *= dims_[i];
  return n;
}

Shape Shape::with(int ax, int64_t size) const {
  Shape s = *this;
  s.dims_[axis(ax)] = size;
  return s;
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < ndim_; ++i) os << (i ? "," : "") << dims_[i];
  os << ']';
  return os.str();
}

bool Shape::operator==(const Shape& o) const {
  return ndim_ == o.ndim_ && std::equal(dims_.begin(), dims_.begin() + ndim_, o.dims_.begin());
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int n = std::max(a.ndim(), b.ndim());
  std::vector<int64_t> out(n);
  for (int i = 0; i < n; ++i) {
    const int ia = a.ndim() - n + i, ib = b.ndim() - n + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    MOE_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", a, " and ", b, " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return Shape(out);
}

}  // namespace moe
