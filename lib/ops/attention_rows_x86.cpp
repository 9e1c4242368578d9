// attention_rows.h implementation: the AVX-512F and AVX2 rows, each compiled for its set by a target attribute and
// called only where cpu_isa() has it. Covered by tests/ops/attention_test.cpp.
#include <immintrin.h>

#include <algorithm>

#include "ops/attention_rows.h"

namespace moe::cpu {
namespace {

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
MOE_AVX2 inline void weighted_sum16(const float* p, const int64_t* kept, int64_t n, const float* v, const int64_t* off,
                                    int64_t lanes, float* o, bool add) {
  const __m256i m[2] = {lanes8(std::min<int64_t>(lanes, 8)), lanes8(std::max<int64_t>(lanes - 8, 0))};
  auto load = [&m](const float* a, int r)
                  MOE_AVX2 { return kWhole ? _mm256_loadu_ps(a + 8 * r) : _mm256_maskload_ps(a + 8 * r, m[r]); };
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

}  // namespace

void dots(CpuIsa isa, const float* q, const float* k, const int64_t* off, int64_t n, int64_t D, float* out) {
  isa == CpuIsa::avx512 ? dots_avx512(q, k, off, n, D, out) : dots_avx2(q, k, off, n, D, out);
}

void weighted_sum(CpuIsa isa, const float* p, const int64_t* kept, int64_t n, const float* v, const int64_t* off,
                  int64_t D, float* o, bool add) {
  isa == CpuIsa::avx512 ? weighted_sum_avx512(p, kept, n, v, off, D, o, add)
                        : weighted_sum_avx2(p, kept, n, v, off, D, o, add);
}

void key_update(CpuIsa isa, float ds, float c, const float* qi, const float* dout_i, float* dk, float* dv, int64_t D) {
  isa == CpuIsa::avx512 ? key_update_avx512(ds, c, qi, dout_i, dk, dv, D)
                        : key_update_avx2(ds, c, qi, dout_i, dk, dv, D);
}

}  // namespace moe::cpu
