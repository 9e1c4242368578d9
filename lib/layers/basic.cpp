// basic.h implementation.
#include "layers/basic.h"

#include <cmath>
#include <utility>
#include <vector>

#include "graph/expr/bias_act_dropout.h"
#include "graph/expr/binary.h"
#include "graph/expr/dropout.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/layer_norm.h"
#include "graph/expr/matmul.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/unary.h"

namespace moe {

namespace {
/// The weight "w" [in, out] and, when `bias`, "b" [out] of a dense layer, for input x.
std::pair<Expr, Expr> dense_weights(const Builder& b, const Expr& x, int64_t in, int64_t out, bool bias,
                                    const std::string& group) {
  MOE_CHECK(x.shape()[-1] == in, b.name("w"), ": input has ", x.shape()[-1], " features, the layer expects ", in);
  Expr w = b.weight("w", Shape{in, out}, Init::glorot_uniform(), group);
  return {w, bias ? b.weight("b", Shape{out}, Init::zeros(), group) : Expr()};
}
}  // namespace

Expr dense(const Builder& b, const Expr& x, int64_t in, int64_t out, bool bias, const std::string& group) {
  auto [w, bb] = dense_weights(b, x, in, out, bias, group);
  return linear(x, w, bb);
}

Expr layer_norm_layer(const Builder& b, const Expr& x, int64_t dim, float eps) {
  Expr g = b.param("g", Shape{dim}, Init::ones());
  Expr beta = b.param("b", Shape{dim}, Init::zeros());
  return layer_norm(x, g, beta, eps);
}

Tensor padding_mask(const Tensor& ids, int pad_id) {
  const std::vector<int32_t> v = ids.to(Device::cpu()).to_vector<int32_t>();
  std::vector<uint8_t> keep(v.size());
  bool any_pad = false;
  for (size_t i = 0; i < v.size(); ++i) {
    keep[i] = v[i] != pad_id;
    any_pad |= !keep[i];
  }
  return any_pad ? Tensor::from_vector(keep, ids.shape()) : Tensor();
}

Tensor sinusoidal_positions(int64_t length, int64_t dim, int64_t offset, DType dtype, Device device) {
  const int64_t half = dim / 2;
  const double step = half > 1 ? std::log(10000.0) / static_cast<double>(half - 1) : 0.0;
  std::vector<float> table(static_cast<size_t>(length * dim), 0.f);
  for (int64_t p = 0; p < length; ++p) {
    const double pos = static_cast<double>(p + offset);
    for (int64_t i = 0; i < half; ++i) {
      const double angle = pos * std::exp(-step * static_cast<double>(i));
      table[static_cast<size_t>(p * dim + i)] = static_cast<float>(std::sin(angle));
      table[static_cast<size_t>(p * dim + half + i)] = static_cast<float>(std::cos(angle));
    }
  }
  return Tensor::from_vector(table, Shape{length, dim}, device, dtype);
}

UnaryOp activation_op(Activation a) { return a == Activation::gelu ? UnaryOp::gelu : UnaryOp::relu; }

Expr residual_block(const Builder& b, const Expr& x, int64_t dim, bool pre_norm, float dropout_p,
                    const std::function<Expr(const Expr&)>& f) {
  if (pre_norm) return add(x, dropout(f(layer_norm_layer(b.sub("ln"), x, dim)), dropout_p));
  return layer_norm_layer(b.sub("ln"), add(x, dropout(f(x), dropout_p)), dim);
}

Expr residual_block_rows(const Builder& b, const Expr& x, const Expr& rows, int64_t dim, bool pre_norm, float dropout_p,
                         const std::function<Expr(const Expr&)>& f) {
  const Shape& s = x.shape();
  const Expr flat = reshape(x, Shape{s.numel() / dim, dim});
  const Expr picked = index_select(flat, rows);
  if (pre_norm)
    return reshape(index_add(flat, rows, dropout(f(layer_norm_layer(b.sub("ln"), picked, dim)), dropout_p)), s);
  return layer_norm_layer(b.sub("ln"), reshape(index_add(flat, rows, dropout(f(picked), dropout_p)), s), dim);
}

Expr feed_forward(const Builder& b, const Expr& x, int64_t dim, int64_t hidden, Activation act,
                  float activation_dropout) {
  auto [w1, b1] = dense_weights(b.sub("fc1"), x, dim, hidden, true, "");
  const Expr h = bias_act_dropout(matmul(x, w1), b1, activation_op(act), activation_dropout);
  return dense(b.sub("fc2"), h, hidden, dim);
}

}  // namespace moe
