// Graph nodes for concat / split / slice / transpose / reshape (math in shape_ops.h). Every copy is
// an (outer, axis, inner) strided copy: a block of `outer` rows, each `size * inner` long. A slice of a
// weight held by int8 inference reads its int8 form (ops/int8_gemm.h; tests/translator/int8_release_test.cpp).
#include "graph/expr/shape_ops.h"

#include <sstream>

#include "ops/int8_gemm.h"
#include "ops/shape_ops.h"
#include "ops/transposed_weights.h"

namespace moe {

Expr concat(const std::vector<Expr>& xs, int axis_in) {
  MOE_CHECK(!xs.empty(), "concat: no inputs");
  const Shape& first = xs[0].shape();
  MOE_CHECK(first.ndim() > 0, "concat: scalar inputs have no axis to join");
  const int axis = first.axis(axis_in);
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (const Expr& x : xs) {
    MOE_CHECK(x.dtype() == xs[0].dtype(), "concat: dtypes ", dtype_name(xs[0].dtype()), " and ", dtype_name(x.dtype()),
              " differ");
    MOE_CHECK(x.shape().ndim() == first.ndim() && x.shape().with(axis, first[axis]) == first, "concat: shape ",
              x.shape(), " does not match ", first, " outside axis ", axis);
    offsets.push_back(total);
    total += x.shape()[axis];
  }
  const int64_t outer = first.outer(axis), inner = first.inner(axis);
  auto fwd = [=](Node& n) {
    Tensor& y = n.alloc_val();
    for (size_t k = 0; k < n.children.size(); ++k) {
      const int64_t len = n.in(int(k)).shape()[axis] * inner;
      strided_copy(n.in(int(k)), y, outer, len, len, total * inner, 0, offsets[k] * inner);
    }
  };
  auto bwd = [=](Node& n) {
    for (size_t k = 0; k < n.children.size(); ++k) {
      if (!n.wants_grad(int(k))) continue;
      const int64_t len = n.in(int(k)).shape()[axis] * inner;
      strided_copy(n.grad, n.grad_of(int(k)), outer, len, total * inner, len, offsets[k] * inner, 0, true);
    }
  };
  return xs[0].graph().add("concat", first.with(axis, total), xs[0].dtype(), xs, fwd, bwd);
}

Expr slice(const Expr& x, int axis_in, int64_t begin, int64_t length) {
  const Shape& s = x.shape();
  MOE_CHECK(s.ndim() > 0, "slice: a scalar has no axis to slice");
  const int axis = s.axis(axis_in);
  MOE_CHECK(begin >= 0 && length >= 0 && begin + length <= s[axis], "slice: range [", begin, ", ", begin + length,
            ") is outside axis ", axis, " of shape ", s);
  const int64_t outer = s.outer(axis), inner = s.inner(axis), full = s[axis] * inner, len = length * inner;
  const int64_t off = begin * inner;
  return x.graph().add(
      "slice", s.with(axis, length), x.dtype(), {x},
      [=](Node& n) {
        // A slice of a weight int8 inference holds (the LSTM decoder's input weights): its values q * scale,
        // as the int8 GEMMs see it, read without its f32 values (which may be released: int8_model.h).
        // Likewise a weight f32 inference holds transposed (ops/transposed_weights.h).
        if (const Int8Matrix* m = active_int8_weight(n.in(0)))
          dequantize_int8_strided(*m, n.alloc_val().data<float>(), outer, len, full, off);
        else if (const Tensor* t = active_transposed_weight(n.in(0)))
          copy_strided_from_transposed(*t, n.alloc_val().data<float>(), outer, len, full, off);
        else
          strided_copy(n.in(0), n.alloc_val(), outer, len, full, len, off, 0);
      },
      [=](Node& n) { strided_copy(n.grad, n.grad_of(0), outer, len, len, full, 0, off, true); });
}

std::vector<Expr> split(const Expr& x, int axis_in, const std::vector<int64_t>& sizes) {
  const int axis = x.shape().axis(axis_in);
  int64_t sum = 0;
  for (int64_t s : sizes) {
    MOE_CHECK(s >= 0, "split: negative size ", s, " for shape ", x.shape());
    sum += s;
  }
  MOE_CHECK(sum == x.shape()[axis], "split: sizes add up to ", sum, " but axis ", axis, " of shape ", x.shape(),
            " has ", x.shape()[axis]);
  std::vector<Expr> out;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, axis, begin, s));
    begin += s;
  }
  return out;
}

Expr transpose(const Expr& x, const std::vector<int>& perm_in) {
  const std::vector<int> perm = normalize_perm("transpose", x.shape(), perm_in);
  const std::vector<int> inv = inverse_perm(perm);
  return x.graph().add(
      "transpose", transpose_shape(x.shape(), perm), x.dtype(), {x},
      [perm](Node& n) { transpose_forward(n.in(0), n.alloc_val(), perm); },
      [inv](Node& n) { transpose_forward(n.grad, n.grad_of(0), inv, true); });
}

Expr reshape(const Expr& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> d = dims;
  auto text = [&] {
    std::ostringstream os;
    os << '[';
    for (size_t i = 0; i < dims.size(); ++i) os << (i ? "," : "") << dims[i];
    os << ']';
    return os.str();
  };
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == -1) {
      MOE_CHECK(infer < 0, "reshape: more than one -1 in ", text());
      infer = static_cast<int>(i);
    } else {
      MOE_CHECK(d[i] >= 0, "reshape: negative size in ", text());
      known *= d[i];
    }
  }
  if (infer >= 0) {
    MOE_CHECK(known > 0 && x.shape().numel() % known == 0, "reshape: cannot infer -1 in ", text(), " for ", x.shape());
    d[static_cast<size_t>(infer)] = x.shape().numel() / known;
  }
  const Shape shape(d);
  MOE_CHECK(shape.numel() == x.shape().numel(), "reshape: ", x.shape(), " (", x.shape().numel(),
            " elements) cannot become ", shape, " (", shape.numel(), ")");
  return x.graph().add(
      "reshape", shape, x.dtype(), {x}, [shape](Node& n) { n.val = n.in(0).view(shape); }, {}, 0);
}

}  // namespace moe
