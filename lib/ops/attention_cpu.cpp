// CPU reference of fused attention (math in attention.h), f32 and f64, with plain loops that
// materialise one row of scores at a time. Backward recomputes p_ij = exp(s_ij - lse_i) and uses
//   dp_ij = w_i dout_i.v_j, delta_i = sum_j p_ij dp_ij, ds_ij = p_ij (dp_ij - delta_i),
//   dq_i += scale sum_j ds_ij k_j, dk_j += scale ds_ij q_i, dv_j += p_ij w_i dout_i, dw += dout_i.o_i.
// Attention dropout multiplies p_ij by z_ij (attention_dropout.h) in the weighted sum and in dp, dv, dw.
// Keys are addressed through per-key offsets (Geometry::ki), so a decoding cache's row table (key_rows: key j of
// sequence b in row key_rows[b, j]) runs the same loops as contiguous keys.
// In f32 on a CPU with AVX-512F or AVX2 (ops/cpu_isa.h) the row loops run hand-vectorised (ops/attention_rows.h):
// q.k_j over the keys and o = sum_j p_j v_j forward, dout_i.v_j and the updates of dk_j and dv_j (key by key) and of
// dq_i (its sum over the keys held in registers, as the forward's o) backward. Each dot product sums 16 (8)
// lanes and then across them, with fused multiply-adds, so its last bits differ from the portable loop's; the
// probabilities are exp_fast's (cpu_math.h, 2 ulp) and their sum is row_sum's (lanes); the weighted sums over keys
// run in four partial sums (key c into sum c mod 4; the portable loop in order), and a row's result does not depend
// on the batch, the thread count, the padded keys or the keys beyond its causal limit.
// Covered by tests/ops/attention_test.cpp (hand-computed values, finite differences in f64, each set's rows
// against the portable ones, a cache's row table) and tests/ops/attention_dropout_test.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "common/cpu_threads.h"
#include "ops/attention.h"
#include "ops/attention_rows.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"
#include "ops/dispatch.h"

namespace moe::cpu {
namespace {

struct Geometry {
  int64_t B, Tq, H, D, Tk, Hk;
  bool causal;
  const uint8_t* pad;
  bool per_position;    // head_weight is [B,Tq,H]
  const int32_t* rows;  // key_rows [B,Tk] of a decoding cache, or nullptr: key j of sequence b is in row b
  int64_t columns;      // k's axis 1: Tk, or a cache's capacity
  Geometry(const Tensor& q, const Tensor& k, const Tensor& key_padding, bool c, const Tensor& hw,
           const Tensor& key_rows = Tensor())
      : B(q.shape()[0]),
        Tq(q.shape()[1]),
        H(q.shape()[2]),
        D(q.shape()[3]),
        Tk(key_rows.defined() ? key_rows.shape()[1] : k.shape()[1]),
        Hk(k.shape()[2]),
        causal(c),
        pad(key_padding.defined() ? key_padding.data<uint8_t>() : nullptr),
        per_position(hw.defined() && hw.shape().ndim() == 3),
        rows(key_rows.defined() ? key_rows.data<int32_t>() : nullptr),
        columns(k.shape()[1]) {}
  bool visible(int64_t b, int64_t i, int64_t j) const {
    if (pad && !pad[b * Tk + j]) return false;
    return !causal || j <= i + (Tk - Tq);
  }
  int64_t keys_before_limit(int64_t i) const {  // keys 0 .. n-1 may be visible to query i (causal limit)
    return causal ? std::clamp<int64_t>(i + (Tk - Tq) + 1, 0, Tk) : Tk;
  }
  int64_t qi(int64_t b, int64_t t, int64_t h) const { return ((b * Tq + t) * H + h) * D; }
  int64_t ki(int64_t b, int64_t t, int64_t hk) const {
    const int64_t row = rows ? rows[b * Tk + t] : b;
    return ((row * columns + t) * Hk + hk) * D;
  }
  /// off[j] = ki(b, j, hk) for the Tk keys (k and v share the layout).
  void key_offsets(int64_t b, int64_t hk, int64_t* off) const {
    for (int64_t j = 0; j < Tk; ++j) off[j] = ki(b, j, hk);
  }
  int64_t wi(int64_t b, int64_t t, int64_t h) const { return per_position ? (b * Tq + t) * H + h : b * H + h; }
};

constexpr int64_t kKeys = 8;  // keys whose dot products run side by side (independent sums: no reordering)

/// The set the rows of T run on: f32 rows other than portable run hand-vectorised (dots, weighted_sum, key_update).
template <class T>
CpuIsa row_isa() {
  return std::is_same_v<T, float> ? cpu_isa() : CpuIsa::portable;
}

/// Scores of row (b, i, h) into s (visible keys only; others -inf; key j at k + off[j]); returns the row
/// maximum. Each dot product
/// sums over d in order, as one key at a time would; kKeys of them are interleaved, for instruction-level
/// parallelism, in every block of keys with a visible one.
/// Where `isa` is not portable (f32 only), the keys up to the causal limit go through dots(), then the mask.
template <class T>
T row_scores(const Geometry& g, const T* q, const T* k, const int64_t* off, int64_t b, int64_t i, int64_t h, T scale,
             std::vector<T>& s, CpuIsa isa) {
  const T* qr = q + g.qi(b, i, h);
  const T ninf = -std::numeric_limits<T>::infinity();
  if constexpr (std::is_same_v<T, float>) {
    if (isa != CpuIsa::portable) {
      const int64_t n = g.keys_before_limit(i);
      dots(isa, qr, k, off, n, g.D, s.data());
      T m = ninf;
      for (int64_t j = 0; j < n; ++j) {
        s[j] = g.visible(b, i, j) ? scale * s[j] : ninf;
        m = std::max(m, s[j]);
      }
      std::fill(s.begin() + n, s.end(), ninf);
      return m;
    }
  }
  for (int64_t j0 = 0; j0 < g.Tk; j0 += kKeys) {
    const int64_t n = std::min(kKeys, g.Tk - j0);
    bool any = false;
    for (int64_t l = 0; l < n; ++l) any |= g.visible(b, i, j0 + l);
    if (!any) {
      std::fill(s.begin() + j0, s.begin() + j0 + n, ninf);
      continue;
    }
    T dot[kKeys] = {};
    if (n == kKeys) {
      for (int64_t d = 0; d < g.D; ++d)
        for (int64_t l = 0; l < kKeys; ++l) dot[l] += qr[d] * k[off[j0 + l] + d];
    } else {
      for (int64_t l = 0; l < n; ++l)
        for (int64_t d = 0; d < g.D; ++d) dot[l] += qr[d] * k[off[j0 + l] + d];
    }
    for (int64_t l = 0; l < n; ++l) s[j0 + l] = g.visible(b, i, j0 + l) ? scale * dot[l] : ninf;
  }
  T m = ninf;
  for (int64_t j = 0; j < g.Tk; ++j)
    if (g.visible(b, i, j)) m = std::max(m, s[j]);
  return m;
}

/// f32 rows on a vector instruction set: s[j] = masked_exp(s[j], m) (cpu_math.h: exp_fast, 0 for a masked key) for
/// j < n, in a loop that vectorises inside run_wide.
void exp_shifted(float* __restrict s, int64_t n, float m) {
  for (int64_t j = 0; j < n; ++j) s[j] = masked_exp(s[j], m);
}

template <class T>
void forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal, T scale,
             const Tensor& head_weight, Tensor& out, Tensor& lse, const AttentionDropout& drop,
             const Tensor& key_rows) {
  const Geometry g(q, k, key_padding, causal, head_weight, key_rows);
  const T *pq = q.data<T>(), *pk = k.data<T>(), *pv = v.data<T>();
  const T* pw = head_weight.defined() ? head_weight.data<T>() : nullptr;
  T *po = out.data<T>(), *pl = lse.data<T>();
  const CpuIsa isa = row_isa<T>();
  const bool simd = isa != CpuIsa::portable;
  // query rows (b, i) in parallel: each writes only its own out and lse entries
  parallel_for(g.B * g.Tq, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.Tk * g.H * g.D)),
               [&](int64_t r0, int64_t r1) {
                 std::vector<T> s(static_cast<size_t>(g.Tk));
                 std::vector<int64_t> kept(static_cast<size_t>(g.Tk)), offs(static_cast<size_t>(g.Hk * g.Tk));
                 int64_t offs_b = -1;  // the sequence whose key offsets offs holds (every key head's)
                 for (int64_t r = r0; r < r1; ++r)
                   for (int64_t h = 0; h < g.H; ++h) {
                     const int64_t b = r / g.Tq, i = r % g.Tq;
                     if (b != offs_b) {
                       for (int64_t hk = 0; hk < g.Hk; ++hk) g.key_offsets(b, hk, offs.data() + hk * g.Tk);
                       offs_b = b;
                     }
                     const int64_t* off = offs.data() + h / (g.H / g.Hk) * g.Tk;
                     const T m = row_scores(g, pq, pk, off, b, i, h, scale, s, isa);
                     T* o = po + g.qi(b, i, h);
                     for (int64_t d = 0; d < g.D; ++d) o[d] = 0;
                     if (m == -std::numeric_limits<T>::infinity()) {  // no visible key: o = 0, lse = -inf
                       pl[(b * g.H + h) * g.Tq + i] = m;
                       continue;
                     }
                     T sum = 0;
                     if constexpr (std::is_same_v<T, float>) {
                       if (simd)
                         run_wide([&] {
                           exp_shifted(s.data(), g.Tk, m);
                           sum = static_cast<T>(row_sum(s.data(), g.Tk, [](float p) { return p; }));
                         });
                     }
                     if (!simd)
                       for (int64_t j = 0; j < g.Tk; ++j) sum += s[j] = std::exp(s[j] - m);  // exp(-inf) = 0
                     const T w = pw ? pw[g.wi(b, i, h)] : T(1);
                     int64_t n = 0;  // the keys with a weight, in order: s[c] = p of key kept[c]
                     for (int64_t j = 0; j < g.Tk; ++j) {
                       if (s[j] == 0) continue;
                       s[n] = w * s[j] / sum * attention_keep(drop, b, h, i, j, g.H, g.Tq, g.Tk);
                       kept[n++] = j;
                     }
                     // o += p v, four keys per pass over o; each o[d] still adds the keys one by one in order
                     pl[(b * g.H + h) * g.Tq + i] = m + std::log(sum);
                     if constexpr (std::is_same_v<T, float>) {
                       if (simd) {
                         weighted_sum(isa, s.data(), kept.data(), n, pv, off, g.D, o);
                         continue;
                       }
                     }
                     int64_t c = 0;
                     for (; c + 4 <= n; c += 4) {
                       const T *a = pv + off[kept[c]], *e = pv + off[kept[c + 1]], *f = pv + off[kept[c + 2]],
                               *u = pv + off[kept[c + 3]];
                       const T pa = s[c], pe = s[c + 1], pf = s[c + 2], pu = s[c + 3];
                       for (int64_t d = 0; d < g.D; ++d) o[d] = o[d] + pa * a[d] + pe * e[d] + pf * f[d] + pu * u[d];
                     }
                     for (; c < n; ++c)
                       for (int64_t d = 0; d < g.D; ++d) o[d] += s[c] * pv[off[kept[c]] + d];
                   }
               });
}

template <class T>
void backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal, T scale,
              const Tensor& head_weight, const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv,
              Tensor& dhw, const AttentionDropout& drop) {
  const Geometry g(q, k, key_padding, causal, head_weight);
  const T *pq = q.data<T>(), *pk = k.data<T>(), *pv = v.data<T>(), *pl = lse.data<T>(), *pdo = dout.data<T>();
  const T* pw = head_weight.defined() ? head_weight.data<T>() : nullptr;
  T* pdq = dq.defined() ? dq.data<T>() : nullptr;
  T* pdk = dk.defined() ? dk.data<T>() : nullptr;
  T* pdv = dv.defined() ? dv.data<T>() : nullptr;
  T* pdw = dhw.defined() ? dhw.data<T>() : nullptr;
  // (batch, key/value head) pairs in parallel: dk and dv of a pair are written by its query heads only
  const int64_t group = g.H / g.Hk;
  const CpuIsa isa = row_isa<T>();
  const bool simd = isa != CpuIsa::portable;
  parallel_for(g.B * g.Hk, 1, [&](int64_t p0, int64_t p1) {
    std::vector<T> s(static_cast<size_t>(g.Tk)), dp(static_cast<size_t>(g.Tk)), z(static_cast<size_t>(g.Tk));
    std::vector<T> dov_all(simd ? static_cast<size_t>(g.Tk) : 0), ds_kept(dov_all.size());
    std::vector<int64_t> off(static_cast<size_t>(g.Tk)), kept(dov_all.size());
    for (int64_t pair = p0; pair < p1; ++pair) {
      g.key_offsets(pair / g.Hk, pair % g.Hk, off.data());
      for (int64_t h = pair % g.Hk * group; h < (pair % g.Hk + 1) * group; ++h)
        for (int64_t i = 0; i < g.Tq; ++i) {
          const int64_t b = pair / g.Hk, hk = pair % g.Hk;
          const T l = pl[(b * g.H + h) * g.Tq + i];
          if (l == -std::numeric_limits<T>::infinity()) continue;  // fully masked row: no gradient
          row_scores(g, pq, pk, off.data(), b, i, h, scale, s, isa);
          const T* gdo = pdo + g.qi(b, i, h);
          const T w = pw ? pw[g.wi(b, i, h)] : T(1);
          if constexpr (std::is_same_v<T, float>) {
            if (simd) {  // p_ij, and dout_i.v_j up to the causal limit (beyond it p_ij = 0)
              run_wide([&] { exp_shifted(s.data(), g.Tk, l); });
              dots(isa, gdo, pv, off.data(), g.keys_before_limit(i), g.D, dov_all.data());
            }
          }
          T delta = 0, dw = 0;
          for (int64_t j = 0; j < g.Tk; ++j) {
            if (!simd) s[j] = std::exp(s[j] - l);                      // p_ij (0 where masked)
            z[j] = attention_keep(drop, b, h, i, j, g.H, g.Tq, g.Tk);  // the forward's dropout factor
            T dov = 0;
            if (s[j] != 0 && simd)
              dov = dov_all[j];
            else if (s[j] != 0)
              for (int64_t d = 0; d < g.D; ++d) dov += gdo[d] * pv[g.ki(b, j, hk) + d];
            dp[j] = w * z[j] * dov;
            delta += s[j] * dp[j];
            dw += s[j] * z[j] * dov;  // dout.o = sum_j p_ij z_ij dout.v_j
          }
          if (pdw) pdw[g.wi(b, i, h)] += dw;
          const int64_t qi = g.qi(b, i, h);
          if constexpr (std::is_same_v<T, float>) {
            if (simd) {  // dk_j and dv_j key by key, then dq_i's sum over the keys in registers
              int64_t n = 0;
              for (int64_t j = 0; j < g.Tk; ++j) {
                if (s[j] == 0) continue;
                ds_kept[n] = s[j] * (dp[j] - delta) * scale;
                kept[n] = j;
                key_update(isa, ds_kept[n++], s[j] * z[j] * w, pq + qi, gdo, pdk ? pdk + off[j] : nullptr,
                           pdv ? pdv + off[j] : nullptr, g.D);
              }
              if (pdq) weighted_sum(isa, ds_kept.data(), kept.data(), n, pk, off.data(), g.D, pdq + qi, true);
              continue;
            }
          }
          for (int64_t j = 0; j < g.Tk; ++j) {
            if (s[j] == 0) continue;
            const T ds = s[j] * (dp[j] - delta) * scale;
            const int64_t kj = g.ki(b, j, hk);
            for (int64_t d = 0; d < g.D; ++d) {
              if (pdq) pdq[qi + d] += ds * pk[kj + d];
              if (pdk) pdk[kj + d] += ds * pq[qi + d];
              if (pdv) pdv[kj + d] += s[j] * z[j] * w * gdo[d];
            }
          }
        }
    }
  });
}
}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                       float scale, const Tensor& head_weight, Tensor& out, Tensor& lse,
                       const AttentionDropout& dropout, const Tensor& key_rows) {
  check_cpu_float("attention", q);
  if (q.dtype() == DType::f64)
    forward<double>(q, k, v, key_padding, causal, scale, head_weight, out, lse, dropout, key_rows);
  else
    forward<float>(q, k, v, key_padding, causal, scale, head_weight, out, lse, dropout, key_rows);
}

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                        float scale, const Tensor& head_weight, const Tensor& /*out*/, const Tensor& lse,
                        const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dhead_weight,
                        const AttentionDropout& dropout) {
  check_cpu_float("attention", q);
  if (q.dtype() == DType::f64)
    backward<double>(q, k, v, key_padding, causal, scale, head_weight, lse, dout, dq, dk, dv, dhead_weight, dropout);
  else
    backward<float>(q, k, v, key_padding, causal, scale, head_weight, lse, dout, dq, dk, dv, dhead_weight, dropout);
}

}  // namespace moe::cpu
