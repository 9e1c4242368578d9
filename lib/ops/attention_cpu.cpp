// CPU reference of fused attention (math in attention.h), f32 and f64, with plain loops that
// materialise one row of scores at a time. Backward recomputes p_ij = exp(s_ij - lse_i) and uses
//   dp_ij = w_i dout_i.v_j, delta_i = sum_j p_ij dp_ij, ds_ij = p_ij (dp_ij - delta_i),
//   dq_i += scale sum_j ds_ij k_j, dk_j += scale ds_ij q_i, dv_j += p_ij w_i dout_i, dw += dout_i.o_i.
// Attention dropout multiplies p_ij by z_ij (attention_dropout.h) in the weighted sum and in dp, dv, dw.
// Keys are addressed through per-key offsets (Geometry::ki), so a decoding cache's row table (key_rows: key j of
// sequence b in row key_rows[b, j]) runs the same loops as contiguous keys.
// In f32 on a CPU with AVX-512F or AVX2 (ops/cpu_isa.h) the row loops run hand-vectorised: q.k_j over the keys
// and o = sum_j p_j v_j forward, dout_i.v_j and the updates of dk_j and dv_j (key by key) and of dq_i (its sum
// over the keys held in registers, as the forward's o) backward. Each dot product sums 16 (8)
// lanes and then across them, with fused multiply-adds, so its last bits differ from the portable loop's; the
// probabilities are exp_fast's (cpu_math.h, 2 ulp) and their sum is row_sum's (lanes); the weighted sums over keys
// run in four partial sums (key c into sum c mod 4; the portable loop in order), and a row's result does not depend
// on the batch, the thread count, the padded keys or the keys beyond its causal limit.
// Covered by tests/ops/attention_test.cpp (hand-computed values, finite differences in f64, each set's rows
// against the portable ones, a cache's row table) and tests/ops/attention_dropout_test.cpp.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "common/cpu_threads.h"
#include "ops/attention.h"
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

MOE_AVX512_BEGIN

/// out[0..16) = _mm512_reduce_add_ps(a[0]) .. _mm512_reduce_add_ps(a[15]), the same additions in the same order
/// (the upper 8 lanes onto the lower, then 4, 2 and 1), on the 16 sums side by side: 45 shuffles and adds for 16
/// keys instead of 16 reductions of 7 steps each.
MOE_AVX512 inline void sum16x16(const __m512* a, float* out) {
  __m512 s8[8];  // keys 2t and 2t+1: [lanes i + (i + 8) of a[2t], i < 8 | the same of a[2t+1]]
  for (int t = 0; t < 8; ++t)
    s8[t] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * t], a[2 * t + 1], 0x44),
                          _mm512_shuffle_f32x4(a[2 * t], a[2 * t + 1], 0xEE));
  __m512 s4[4];  // keys 4u .. 4u+3, a 128-bit block each: lanes i + (i + 4), i < 4
  for (int u = 0; u < 4; ++u)
    s4[u] = _mm512_add_ps(_mm512_shuffle_f32x4(s8[2 * u], s8[2 * u + 1], 0x88),
                          _mm512_shuffle_f32x4(s8[2 * u], s8[2 * u + 1], 0xDD));
  // block j: [lanes 0 + 2, 1 + 3 of key j (or 8 + j), the same of key 4 + j (12 + j)]
  const __m512 s2a = _mm512_add_ps(_mm512_shuffle_ps(s4[0], s4[1], 0x44), _mm512_shuffle_ps(s4[0], s4[1], 0xEE));
  const __m512 s2b = _mm512_add_ps(_mm512_shuffle_ps(s4[2], s4[3], 0x44), _mm512_shuffle_ps(s4[2], s4[3], 0xEE));
  // block j: keys j, 4 + j, 8 + j, 12 + j: key k sits in lane 4 (k mod 4) + k / 4
  const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(s2a, s2b, 0x88), _mm512_shuffle_ps(s2a, s2b, 0xDD));
  _mm512_storeu_ps(out,
                   _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r));
}

/// out[j] = q . k_j for the n keys k_j = k + off[j], D floats each: sixteen keys at a time (their sums reduced
/// together, sum16x16), then four, 16 lanes each; every key's dot product is summed in the same order whichever
/// block it falls in.
MOE_AVX512 void dots_avx512(const float* q, const float* k, const int64_t* off, int64_t n, int64_t D, float* out) {
  const int64_t full = D & ~int64_t(15);
  const __mmask16 tail = __mmask16((1u << (D - full)) - 1);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const float* kr[16];
    __m512 a[16];
    for (int l = 0; l < 16; ++l) {
      kr[l] = k + off[j + l];
      a[l] = _mm512_setzero_ps();
    }
    for (int64_t x = 0; x < full; x += 16) {
      const __m512 qv = _mm512_loadu_ps(q + x);
      for (int l = 0; l < 16; ++l) a[l] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(kr[l] + x), a[l]);
    }
    if (tail) {
      const __m512 qv = _mm512_maskz_loadu_ps(tail, q + full);
      for (int l = 0; l < 16; ++l) a[l] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, kr[l] + full), a[l]);
    }
    sum16x16(a, out + j);
  }
  for (; j + 4 <= n; j += 4) {
    const float *ka = k + off[j], *kb = k + off[j + 1], *kc = k + off[j + 2], *kd = k + off[j + 3];
    __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
    for (int64_t x = 0; x < full; x += 16) {
      const __m512 qv = _mm512_loadu_ps(q + x);
      a = _mm512_fmadd_ps(qv, _mm512_loadu_ps(ka + x), a);
      b = _mm512_fmadd_ps(qv, _mm512_loadu_ps(kb + x), b);
      c = _mm512_fmadd_ps(qv, _mm512_loadu_ps(kc + x), c);
      d = _mm512_fmadd_ps(qv, _mm512_loadu_ps(kd + x), d);
    }
    if (tail) {
      const __m512 qv = _mm512_maskz_loadu_ps(tail, q + full);
      a = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, ka + full), a);
      b = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, kb + full), b);
      c = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, kc + full), c);
      d = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, kd + full), d);
    }
    out[j] = _mm512_reduce_add_ps(a);
    out[j + 1] = _mm512_reduce_add_ps(b);
    out[j + 2] = _mm512_reduce_add_ps(c);
    out[j + 3] = _mm512_reduce_add_ps(d);
  }
  for (; j < n; ++j) {
    const float* kj = k + off[j];
    __m512 a = _mm512_setzero_ps();
    for (int64_t x = 0; x < full; x += 16) a = _mm512_fmadd_ps(_mm512_loadu_ps(q + x), _mm512_loadu_ps(kj + x), a);
    if (tail) a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, q + full), _mm512_maskz_loadu_ps(tail, kj + full), a);
    out[j] = _mm512_reduce_add_ps(a);
  }
}

/// weighted_sum_avx512 over lanes [0, 16 R) of o and of the v rows (the first `lanes` of them unless kWhole: whole
/// registers take plain loads): key c goes into partial sum c mod 4 (each in order, o's old value starting the
/// first) and o = (s0 + s1) + (s2 + s3), as weighted_sum16 sums each element on AVX2, so that four chains of
/// multiply-adds per register run side by side (one chain is bound by the FMA's latency, not its throughput).
template <int R, bool kWhole>
MOE_AVX512 inline void weighted_sum_lanes(const float* p, const int64_t* kept, int64_t n, const float* v,
                                          const int64_t* off, int64_t lanes, float* o, bool add) {
  __mmask16 m[R];
  for (int r = 0; r < R; ++r) {
    const int64_t in = std::clamp<int64_t>(lanes - 16 * r, 0, 16);
    m[r] = __mmask16(in == 16 ? 0xFFFFu : (1u << in) - 1);
  }
  auto load = [&m](const float* a, int r)
                  MOE_AVX512 { return kWhole ? _mm512_loadu_ps(a + 16 * r) : _mm512_maskz_loadu_ps(m[r], a + 16 * r); };
  __m512 a[4][R];
  for (auto& part : a)
    for (int r = 0; r < R; ++r) part[r] = _mm512_setzero_ps();
  if (add)
    for (int r = 0; r < R; ++r) a[0][r] = load(o, r);
  auto step = [&](int64_t c, int q) MOE_AVX512 {
    const float* vr = v + off[kept[c]];
    const __m512 pc = _mm512_set1_ps(p[c]);
    for (int r = 0; r < R; ++r) a[q][r] = _mm512_fmadd_ps(pc, load(vr, r), a[q][r]);
  };
  int64_t c = 0;
  for (; c + 4 <= n; c += 4)
    for (int q = 0; q < 4; ++q) step(c + q, q);
  for (int q = 0; c + q < n; ++q) step(c + q, q);
  for (int r = 0; r < R; ++r) {
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(a[0][r], a[1][r]), _mm512_add_ps(a[2][r], a[3][r]));
    if (kWhole)
      _mm512_storeu_ps(o + 16 * r, sum);
    else
      _mm512_mask_storeu_ps(o + 16 * r, m[r], sum);
  }
}

/// o = sum_c p[c] v_kept[c] (D floats; key j at v + off[j]), or o += the same when `add`: 32 elements of o at a
/// time, then 16, then the rest (weighted_sum_lanes: four partial sums per element).
MOE_AVX512 void weighted_sum_avx512(const float* p, const int64_t* kept, int64_t n, const float* v, const int64_t* off,
                                    int64_t D, float* o, bool add) {
  int64_t x = 0;
  for (; x + 32 <= D; x += 32) weighted_sum_lanes<2, true>(p, kept, n, v + x, off, 32, o + x, add);
  if (x + 16 <= D) {
    weighted_sum_lanes<1, true>(p, kept, n, v + x, off, 16, o + x, add);
    x += 16;
  }
  if (x < D) weighted_sum_lanes<1, false>(p, kept, n, v + x, off, D - x, o + x, add);
}

/// y += a x on the lanes of m.
MOE_AVX512 inline void axpy_masked(float* y, __m512 a, const float* x, __mmask16 m) {
  _mm512_mask_storeu_ps(y, m, _mm512_fmadd_ps(a, _mm512_maskz_loadu_ps(m, x), _mm512_maskz_loadu_ps(m, y)));
}

/// The backward's update of one key by one query: dk_j += ds q_i, dv_j += c dout_i (D floats; a null destination
/// is skipped). dq_i's sum over the keys is a weighted sum (weighted_sum with add).
MOE_AVX512 void key_update_avx512(float ds, float c, const float* qi, const float* dout_i, float* dk, float* dv,
                                  int64_t D) {
  const __m512 vds = _mm512_set1_ps(ds), vc = _mm512_set1_ps(c);
  for (int64_t x = 0; x < D; x += 16) {
    const __mmask16 m = __mmask16(D - x >= 16 ? 0xFFFFu : (1u << (D - x)) - 1);
    if (dk) axpy_masked(dk + x, vds, qi + x, m);
    if (dv) axpy_masked(dv + x, vc, dout_i + x, m);
  }
}

MOE_AVX512_END

/// The first `lanes` (0-8) of 8 lanes, as _mm256_maskload_ps / _mm256_maskstore_ps take them.
MOE_AVX2 inline __m256i lanes8(int64_t lanes) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(lanes)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

MOE_AVX2 inline float sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

/// out[0..8) = sum8(a[0]) .. sum8(a[7]), the same additions in the same order, on the 8 sums side by side (a
/// transpose of the reduction: 15 shuffles and 7 adds for 8 keys instead of 8 x 6 instructions).
MOE_AVX2 inline void sum8x8(const __m256* a, float* out) {
  __m256 v[4];  // v[t] = [a_2t lo + hi | a_2t+1 lo + hi]: sum8's first step for two keys
  for (int t = 0; t < 4; ++t)
    v[t] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * t], a[2 * t + 1], 0x20),
                         _mm256_permute2f128_ps(a[2 * t], a[2 * t + 1], 0x31));
  // lanes (0 + 2, 1 + 3) of each key: [k0, k0, k2, k2 | k1, k1, k3, k3] and the same for keys 4..7
  const __m256 w0 = _mm256_add_ps(_mm256_shuffle_ps(v[0], v[1], 0x44), _mm256_shuffle_ps(v[0], v[1], 0xEE));
  const __m256 w1 = _mm256_add_ps(_mm256_shuffle_ps(v[2], v[3], 0x44), _mm256_shuffle_ps(v[2], v[3], 0xEE));
  // the first of each pair plus the second: [k0, k2, k4, k6 | k1, k3, k5, k7]
  const __m256 r = _mm256_add_ps(_mm256_shuffle_ps(w0, w1, 0x88), _mm256_shuffle_ps(w0, w1, 0xDD));
  _mm256_storeu_ps(out, _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/// dots_avx512 on AVX2: eight keys at a time (their sums reduced together, sum8x8), then four, 8 lanes each; every
/// key's dot product is summed in the same order whichever block it falls in.
MOE_AVX2 void dots_avx2(const float* q, const float* k, const int64_t* off, int64_t n, int64_t D, float* out) {
  const int64_t full = D & ~int64_t(7);
  const bool has_tail = D > full;
  const __m256i tail = lanes8(D - full);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const float* kr[8];
    __m256 a[8];
    for (int l = 0; l < 8; ++l) {
      kr[l] = k + off[j + l];
      a[l] = _mm256_setzero_ps();
    }
    for (int64_t x = 0; x < full; x += 8) {
      const __m256 qv = _mm256_loadu_ps(q + x);
      for (int l = 0; l < 8; ++l) a[l] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[l] + x), a[l]);
    }
    if (has_tail) {
      const __m256 qv = _mm256_maskload_ps(q + full, tail);
      for (int l = 0; l < 8; ++l) a[l] = _mm256_fmadd_ps(qv, _mm256_maskload_ps(kr[l] + full, tail), a[l]);
    }
    sum8x8(a, out + j);
  }
  for (; j + 4 <= n; j += 4) {
    const float *ka = k + off[j], *kb = k + off[j + 1], *kc = k + off[j + 2], *kd = k + off[j + 3];
    __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
    for (int64_t x = 0; x < full; x += 8) {
      const __m256 qv = _mm256_loadu_ps(q + x);
      a = _mm256_fmadd_ps(qv, _mm256_loadu_ps(ka + x), a);
      b = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kb + x), b);
      c = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kc + x), c);
      d = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kd + x), d);
    }
    if (has_tail) {
      const __m256 qv = _mm256_maskload_ps(q + full, tail);
      a = _mm256_fmadd_ps(qv, _mm256_maskload_ps(ka + full, tail), a);
      b = _mm256_fmadd_ps(qv, _mm256_maskload_ps(kb + full, tail), b);
      c = _mm256_fmadd_ps(qv, _mm256_maskload_ps(kc + full, tail), c);
      d = _mm256_fmadd_ps(qv, _mm256_maskload_ps(kd + full, tail), d);
    }
    out[j] = sum8(a);
    out[j + 1] = sum8(b);
    out[j + 2] = sum8(c);
    out[j + 3] = sum8(d);
  }
  for (; j < n; ++j) {
    const float* kj = k + off[j];
    __m256 a = _mm256_setzero_ps();
    for (int64_t x = 0; x < full; x += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + x), _mm256_loadu_ps(kj + x), a);
    if (has_tail) a = _mm256_fmadd_ps(_mm256_maskload_ps(q + full, tail), _mm256_maskload_ps(kj + full, tail), a);
    out[j] = sum8(a);
  }
}

/// weighted_sum_avx512 on AVX2, 16 elements of o at a time in two registers: key c goes into partial sum c mod 4
/// (each in order, o's old value starting the first) and o = (s0 + s1) + (s2 + s3), so that four chains of
/// multiply-adds run side by side (one chain per register is bound by the FMA's latency, not its throughput).
/// kWhole: all 16 elements, by plain loads (a masked load costs more on AMD cores); else the first `lanes`.
template <bool kWhole>
MOE_AVX2 inline void weighted_sum16(const float* p, const int64_t* kept, int64_t n, const float* v,
                                    const int64_t* off, int64_t lanes, float* o, bool add) {
  const __m256i m[2] = {lanes8(std::min<int64_t>(lanes, 8)), lanes8(std::max<int64_t>(lanes - 8, 0))};
  auto load = [&m](const float* a, int r) MOE_AVX2 {
    return kWhole ? _mm256_loadu_ps(a + 8 * r) : _mm256_maskload_ps(a + 8 * r, m[r]);
  };
  __m256 a[4][2];
  for (auto& part : a) part[0] = part[1] = _mm256_setzero_ps();
  if (add) a[0][0] = load(o, 0), a[0][1] = load(o, 1);
  auto step = [&](int64_t c, int q) MOE_AVX2 {
    const float* vr = v + off[kept[c]];
    const __m256 pc = _mm256_set1_ps(p[c]);
    a[q][0] = _mm256_fmadd_ps(pc, load(vr, 0), a[q][0]);
    a[q][1] = _mm256_fmadd_ps(pc, load(vr, 1), a[q][1]);
  };
  int64_t c = 0;
  for (; c + 4 <= n; c += 4)
    for (int q = 0; q < 4; ++q) step(c + q, q);
  for (int q = 0; c + q < n; ++q) step(c + q, q);
  for (int r = 0; r < 2; ++r) {
    const __m256 sum = _mm256_add_ps(_mm256_add_ps(a[0][r], a[1][r]), _mm256_add_ps(a[2][r], a[3][r]));
    if (kWhole)
      _mm256_storeu_ps(o + 8 * r, sum);
    else
      _mm256_maskstore_ps(o + 8 * r, m[r], sum);
  }
}

MOE_AVX2 void weighted_sum_avx2(const float* p, const int64_t* kept, int64_t n, const float* v, const int64_t* off,
                                int64_t D, float* o, bool add) {
  for (int64_t x = 0; x < D; x += 16) {
    if (x + 16 <= D)
      weighted_sum16<true>(p, kept, n, v + x, off, 16, o + x, add);
    else
      weighted_sum16<false>(p, kept, n, v + x, off, D - x, o + x, add);
  }
}

/// key_update_avx512 on AVX2, with plain loads and stores for whole groups of 8 (a masked store costs 10 or more
/// cycles on AMD cores).
MOE_AVX2 void key_update_avx2(float ds, float c, const float* qi, const float* dout_i, float* dk, float* dv,
                              int64_t D) {
  const __m256 vds = _mm256_set1_ps(ds), vc = _mm256_set1_ps(c);
  const int64_t full = D & ~int64_t(7);
  for (int64_t x = 0; x < full; x += 8) {
    if (dk) _mm256_storeu_ps(dk + x, _mm256_fmadd_ps(vds, _mm256_loadu_ps(qi + x), _mm256_loadu_ps(dk + x)));
    if (dv) _mm256_storeu_ps(dv + x, _mm256_fmadd_ps(vc, _mm256_loadu_ps(dout_i + x), _mm256_loadu_ps(dv + x)));
  }
  if (full == D) return;
  const __m256i m = lanes8(D - full);
  auto axpy = [m](float* y, __m256 a, const float* x) MOE_AVX2 {
    _mm256_maskstore_ps(y, m, _mm256_fmadd_ps(a, _mm256_maskload_ps(x, m), _mm256_maskload_ps(y, m)));
  };
  if (dk) axpy(dk + full, vds, qi + full);
  if (dv) axpy(dv + full, vc, dout_i + full);
}

/// The f32 row kernels of the wider sets (isa avx2 or avx512).
void dots(CpuIsa isa, const float* q, const float* k, const int64_t* off, int64_t n, int64_t D, float* out) {
  isa == CpuIsa::avx512 ? dots_avx512(q, k, off, n, D, out) : dots_avx2(q, k, off, n, D, out);
}
void weighted_sum(CpuIsa isa, const float* p, const int64_t* kept, int64_t n, const float* v, const int64_t* off,
                  int64_t D, float* o, bool add = false) {
  isa == CpuIsa::avx512 ? weighted_sum_avx512(p, kept, n, v, off, D, o, add)
                        : weighted_sum_avx2(p, kept, n, v, off, D, o, add);
}
void key_update(CpuIsa isa, float ds, float c, const float* qi, const float* dout_i, float* dk, float* dv, int64_t D) {
  isa == CpuIsa::avx512 ? key_update_avx512(ds, c, qi, dout_i, dk, dv, D)
                        : key_update_avx2(ds, c, qi, dout_i, dk, dv, D);
}

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
