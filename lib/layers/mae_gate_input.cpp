// mae_gate_input.h implementation. The averaging matrices depend only on sizes: built on the host and kept
// in small per-thread caches (the layers of one batch share them, so a batch uploads each once). The
// mean weights over a padding mask are computed on the device from the mask (no host read).
//   A[t, j] = 1 / n_t  if query position q = o + t sees column position a = o - P + j
//                      (a <= q, and q - a < W for a window), n_t = min(q + 1, W) (or q + 1)
//   prefix with a running sum S: u_t = (A x)_t + S / (q + 1)
// Covered by tests/layers/mae_test.cpp ("gate inputs", "causal gates leak nothing").
#include "layers/mae_gate_input.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/matmul.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "layers/recent_tensors.h"

namespace moe {

namespace {
/// (o, P, T, W, dtype, device): the averaging matrix [T, P + T] and the running-sum coefficients [T].
using CausalKey = std::tuple<int64_t, int64_t, int64_t, int64_t, DType, Device, bool>;

Tensor causal_tensor(int64_t o, int64_t p, int64_t t, int64_t window, DType dtype, Device device, bool coeffs) {
  thread_local RecentTensors<CausalKey> cache;
  return cache.get(CausalKey{o, p, t, window, dtype, device, coeffs}, [&] {
    const int64_t cols = p + t;
    std::vector<double> v(static_cast<size_t>(coeffs ? t : t * cols), 0.0);
    for (int64_t r = 0; r < t; ++r) {
      const int64_t q = o + r, n = window > 0 ? std::min(q + 1, window) : q + 1;
      if (coeffs) {
        v[static_cast<size_t>(r)] = 1.0 / static_cast<double>(n);
        continue;
      }
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t a = o - p + j;
        if (a <= q && (window <= 0 || q - a < window)) v[static_cast<size_t>(r * cols + j)] = 1.0 / n;
      }
    }
    return Tensor::from_vector(v, coeffs ? Shape{1, t, 1} : Shape{t, cols}, device, dtype);
  });
}

/// Mean weights [B, 1, T]: padding / (real positions of the row), from the u8 mask on the device as nodes
/// of the graph (the host never reads the mask; a captured graph's replay weighs the mask's new contents).
/// A row without a real position gets weights 0 (0 / 1e-30; the sum is exact for a count >= 1).
Expr mean_weights(Graph& g, const Tensor& padding, DType dtype) {
  const Shape& s = padding.shape();
  Expr keep = cast(g.input(padding.device() == g.device() ? padding : padding.to(g.device())),
                   dtype == DType::f64 ? DType::f64 : DType::f32);
  Expr w = div(keep, add_scalar(sum(keep, 1, true), 1e-30f));
  return reshape(cast(w, dtype), Shape{s[0], 1, s[1]});
}

/// Causal means [B, T, d] of x (window 0 = whole prefix), continuing the cache's state when given.
Expr causal_mean(const Expr& x, int64_t window, KVCache* cache) {
  Graph& g = x.graph();
  const Shape& s = x.shape();
  const int64_t b = s[0], t = s[1], d = s[2], o = cache ? cache->positions : 0;
  MOE_CHECK(!cache || !g.training(), "mae: incremental gate inputs need an inference graph");
  Expr ctx = x, carry;
  if (cache && window > 0 && cache->rows.count("mae.window")) ctx = concat({g.input(cache->rows["mae.window"]), x}, 1);
  if (cache && window <= 0 && cache->rows.count("mae.sum")) carry = g.input(cache->rows["mae.sum"]);
  const int64_t p = ctx.shape()[1] - t;
  Expr u = matmul(g.input(causal_tensor(o, p, t, window, x.dtype(), g.device(), false)), ctx);
  if (carry.defined())
    u = add(u, mul(g.input(causal_tensor(o, p, t, window, x.dtype(), g.device(), true)), reshape(carry, {b, 1, d})));
  if (cache) {
    if (window > 0) {
      const int64_t keep = std::min(o + t, window - 1);
      if (keep > 0) cache->rows["mae.window"] = slice(ctx, 1, p + t - keep, keep).val();
    } else {
      Expr total = sum(x, 1);
      cache->rows["mae.sum"] = (carry.defined() ? add(carry, total) : total).val();
    }
    cache->positions = o + t;
  }
  return u;
}
}  // namespace

Expr sequence_mean(const Expr& x, const Tensor& padding) {
  const Shape& s = x.shape();
  MOE_CHECK(s.ndim() == 3, "mae: sequence_mean needs [B, T, d], not ", s);
  if (!padding.defined()) return mean(x, 1);
  MOE_CHECK(padding.dtype() == DType::u8 && padding.shape() == Shape({s[0], s[1]}), "mae: padding ", padding.shape(),
            " ", dtype_name(padding.dtype()), " does not fit the sequence ", s, " (u8 [B, T] required)");
  return reshape(matmul(mean_weights(x.graph(), padding, x.dtype()), x), {s[0], s[2]});
}

MaeGateInput mae_gate_input(const AttentionInput& in, GateInput policy, int64_t window, DType dtype) {
  const Shape& s = in.x.shape();
  MOE_CHECK(s.ndim() == 3, "mae: queries must be [B, T, d], not ", s);
  if (policy == GateInput::source_mean) {
    MOE_CHECK(in.source_mean.defined() && in.source_mean.shape() == Shape({s[0], s[2]}),
              "mae: gate_input source_mean needs the encoder output mean [", s[0], ",", s[2], "] (a decoder site; got ",
              in.source_mean.defined() ? in.source_mean.shape() : Shape{}, ")");
    return {cast(in.source_mean, dtype), false};
  }
  Expr x = cast(in.x, dtype);
  if (policy == GateInput::full_mean && !in.cache) return {sequence_mean(x, in.query_padding), false};
  const int64_t w = policy == GateInput::causal_window_mean ? window : 0;
  return {reshape(causal_mean(x, w, in.cache), {s[0] * s[1], s[2]}), true};
}

}  // namespace moe
