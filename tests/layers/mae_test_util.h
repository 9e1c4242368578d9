// Helpers of the MAE tests (mae_test.cpp, mae_model_test.cpp, mae_causality_test.cpp): options from
// YAML, site inputs, an MHA reference that weights the head contexts outside the fused attention op,
// parameter access in the store, a finite-difference check of store parameters (f32 masters, f64
// graphs), and tiny Transformer / LM configurations with id tensors.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "graph/expr/attention.h"
#include "graph/expr/binary.h"
#include "graph/expr/shape_ops.h"
#include "layers/basic.h"
#include "layers/mae.h"
#include "models/transformer_config.h"
#include "models/transformer_lm_config.h"
#include "support/gradcheck.h"
#include "support/store_snapshot.h"

namespace moe::test {

inline MaeOptions mae_opts(const std::string& yaml, int heads = 4) {
  return MaeOptions::from_yaml(YAML::Load(yaml), heads);
}

/// A 2+2-layer Transformer (d 16, 4 heads, vocabularies of 12) or a 2-layer LM with the given attention options.
inline TransformerConfig tiny_mt(const std::string& attention) {
  return TransformerConfig::from_yaml(
      YAML::Load("{src_vocab: 12, tgt_vocab: 12, d_model: 16, ffn_dim: 32, heads: 4, "
                 "enc_layers: 2, dec_layers: 2, dropout: 0, max_positions: 32, "
                 "attention: " +
                 attention + "}"));
}
inline TransformerLmConfig tiny_lm(const std::string& attention) {
  return TransformerLmConfig::from_yaml(
      YAML::Load("{vocab: 12, d_model: 16, ffn_dim: 32, heads: 4, layers: 2, "
                 "dropout: 0, max_positions: 32, attention: " +
                 attention + "}"));
}

inline Tensor ids(const std::vector<int32_t>& v, int64_t b, int64_t t) { return Tensor::from_vector(v, Shape{b, t}); }
inline Tensor u8(const std::vector<uint8_t>& v, int64_t b, int64_t t) { return Tensor::from_vector(v, Shape{b, t}); }
/// Column t of ids [B, T] as [B].
inline Tensor step_ids(const Tensor& tgt, int64_t t) {
  const auto v = tgt.to_vector<int32_t>();
  const int64_t len = tgt.shape()[1];
  std::vector<int32_t> col;
  for (int64_t r = 0; r < tgt.shape()[0]; ++r) col.push_back(v[static_cast<size_t>(r * len + t)]);
  return Tensor::from_vector(col, Shape{tgt.shape()[0]});
}

inline GraphOptions f64_graph(bool training, uint64_t step = 0) {
  return GraphOptions{.training = training, .compute_dtype = DType::f64, .seed = 9, .step = step};
}

/// Self-attention input over x; padding (u8 [B, T]) marks real queries (and keys when not causal).
inline AttentionInput self_input(const Expr& x, bool causal, const Tensor& padding = {}, KVCache* cache = nullptr) {
  return AttentionInput{x, x, causal ? Tensor() : padding, causal, true, cache, padding, Expr()};
}

/// MHA over the site's q/k/v/o parameters with contexts multiplied by omega ([B, H] or [B, T, H],
/// values per head) after the attention op (undefined: plain MHA).
inline Expr mha_reference(const moe::Builder& b, const AttentionInput& in, int64_t dim, int heads,
                          const Tensor& omega) {
  const Heads h = project_heads(b, in, dim, heads, heads);
  Expr o = attention(h.q, h.k, h.v, in.key_padding, in.causal, 1.0f / std::sqrt(float(dim / heads)));
  const Shape s = o.shape();  // a copy: o is reassigned below
  if (omega.defined()) {
    const int64_t t = omega.shape().ndim() == 3 ? s[1] : 1;
    o = mul(o, b.graph().input(
                   Tensor::from_vector(omega.to_vector<double>(), Shape{s[0], t, s[2], 1}, Device::cpu(), o.dtype())));
  }
  return dense(b.sub("o"), reshape(o, Shape{s[0], s[1], s[2] * s[3]}), dim, dim);
}

/// [B, H] weights c * [l not dropped by expert e] for every row (experts as in mae_head_weights).
inline Tensor expert_omega(const MaeOptions& o, int expert, int64_t rows) {
  std::vector<int> dropped;
  if (o.dropped == 1) dropped = {expert};
  for (int i = 0, e = 0; o.dropped == 2 && i < o.heads; ++i)
    for (int j = i + 1; j < o.heads; ++j, ++e)
      if (e == expert) dropped = {i, j};
  const double c = double(o.heads) / (o.heads - o.dropped);
  std::vector<double> v;
  for (int64_t r = 0; r < rows; ++r)
    for (int l = 0; l < o.heads; ++l)
      v.push_back(std::find(dropped.begin(), dropped.end(), l) == dropped.end() ? c : 0);
  return Tensor::from_vector(v, Shape{rows, o.heads});
}

inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

inline std::vector<double> values(const ParameterStore& s, const std::string& name) {
  return s.value(name).to_vector<double>();
}
inline void set_values(ParameterStore& s, const std::string& name, const std::vector<double>& v) {
  Tensor t = s.value(name);
  t.copy_from(Tensor::from_vector(v, t.shape(), Device::cpu(), DType::f32));
}

/// Finite differences of sum(out * w) with respect to `per` elements of each named store parameter,
/// against the gradients backward() leaves in the store. Each evaluation builds a fresh graph with
/// `opt` (same seed and step: same dropout masks). Returns the largest error relative to max(1, |num|).
inline double store_gradcheck(ParameterStore& store, const std::vector<std::string>& names,
                              const std::function<Expr(Graph&)>& build, GraphOptions opt, int per = 5) {
  store.zero_grads();
  // Training graphs update state in place (running statistics of gate_norm running): every graph
  // starts from the same store, and a perturbed parameter is set again after each restore.
  const auto state = snapshot(store);
  std::vector<double> w;
  {
    Graph g(Device::cpu(), &store, opt);
    Expr out = build(g);
    g.forward();
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(0.5, 1.5);
    for (int64_t i = 0; i < out.shape().numel(); ++i) w.push_back(u(rng));
    g.backward_from(out, Tensor::from_vector(w, out.shape(), Device::cpu(), out.dtype()));
  }
  restore(store, state);
  auto f = [&] {
    double r;
    {
      Graph g(Device::cpu(), &store, opt);
      Expr out = build(g);
      g.forward();
      r = weighted_sum(out.val(), w);
    }
    restore(store, state);
    return r;
  };
  double worst = 0;
  for (const std::string& name : names) {
    const std::vector<double> analytic = store.grad(name).to_vector<double>();
    float* p = store.value(name).data<float>();
    const int64_t n = store.value(name).numel(), stride = std::max<int64_t>(1, n / per);
    for (int64_t k = 0; k < n; k += stride) {
      const float orig = p[k], hi = orig + 1e-3f, lo = orig - 1e-3f;
      p[k] = hi;
      const double f_hi = f();
      p[k] = lo;
      const double f_lo = f();
      p[k] = orig;
      const double numeric = (f_hi - f_lo) / (double(hi) - double(lo));
      const double err = std::abs(numeric - analytic[static_cast<size_t>(k)]) / std::max(1.0, std::abs(numeric));
      INFO(name << "[" << k << "]: numeric " << numeric << " analytic " << analytic[static_cast<size_t>(k)]);
      CHECK(err < 1e-4);
      worst = std::max(worst, err);
    }
  }
  return worst;
}

}  // namespace moe::test
