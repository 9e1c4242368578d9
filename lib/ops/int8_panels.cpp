// cpu_gemm.h: the AVX2 int8 product over a weight packed once into panels (moe's own kernel on CPUs with AVX2 and
// without AVX-512 VNNI, where oneDNN's product saturates; ops/cpu_gemm.h).
//   Packing: op(b) [k, n] as panels of 8 columns; panel p holds, for each pair t of rows 2t, 2t + 1, the 16 bytes
//   (b[2t][8p + c], b[2t + 1][8p + c]) for c = 0..7, zeros past k and n: ceil(n / 8) ceil(k / 2) 16 bytes, as q.
//   Product: a row's pair (a_2t, a_2t+1) as int16, broadcast; a panel's 16 bytes widened to int16; vpmaddwd gives
//   the 8 lanes a_2t b[2t][c] + a_2t+1 b[2t+1][c] in int32 (exact: |sum| <= 2 x 128 x 128), added over t:
//   c[i][8p + c] = sum_t (...), exact while the sums fit int32 (k x 127 x 127 < 2^31 for quantized operands: the
//   callers' k < 133,000). Stored as int32, or scaled in the store as ops/int8_gemm.h's portable loop rounds.
// Register blocking: R rows x C panels of accumulators, each widened panel load used for R rows, each broadcast
// for C panels: per pair of k, C loads + R broadcasts + 2 R C integer ops for 16 R C products (the loop it
// replaced unpacked b and built a's pairs with scalar code at every call: ~3x the instructions).
// Covered by tests/ops/cpu_gemm_test.cpp ("the int8 product is exact") and tests/ops/int8_gemm_test.cpp ("every
// instruction set gives the portable quantized products").
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "ops/cpu_gemm.h"
#include "ops/cpu_isa.h"

namespace moe::cpu {

int64_t s8_panels_bytes(int64_t k, int64_t n) { return (n + 7) / 8 * ((k + 1) / 2) * 16; }

void pack_s8_panels(bool tb, int64_t k, int64_t n, const int8_t* b, int64_t ldb, int8_t* out) {
  const int64_t pairs = (k + 1) / 2;
  auto at = [&](int64_t p, int64_t j) -> int8_t {
    if (p >= k || j >= n) return 0;
    return tb ? b[j * ldb + p] : b[p * ldb + j];
  };
  for (int64_t panel = 0; panel < (n + 7) / 8; ++panel)
    for (int64_t t = 0; t < pairs; ++t, out += 16)
      for (int c = 0; c < 8; ++c) {
        out[2 * c] = at(2 * t, 8 * panel + c);
        out[2 * c + 1] = at(2 * t + 1, 8 * panel + c);
      }
}

namespace {
/// Where a tile's exact sums go: c[i][j] as int32.
struct Int32Sink {
  int32_t* c;
  int64_t ldc;
  MOE_AVX2_EXACT void put(int64_t i, int64_t j, __m256i sums, int64_t count) const {
    int32_t* out = c + i * ldc + j;
    if (count == 8) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), sums);
      return;
    }
    alignas(32) int32_t last[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(last), sums);
    std::copy(last, last + count, out);
  }
};

/// Or scaled: out[i][j] = (accumulate ? out[i][j] : 0) + float(sum) (row_scale[i] col_scale[j]), the products and
/// the sum rounded as written (no FMA in this target), as the portable loop of ops/int8_gemm.cpp rounds them.
struct ScaledSink {
  float* out;
  int64_t ldo;
  const float* row_scale;
  const float* col_scale;
  bool accumulate;
  MOE_AVX2_EXACT void put(int64_t i, int64_t j, __m256i sums, int64_t count) const {
    float* o = out + i * ldo + j;
    const float* cs = col_scale + j;
    if (count == 8) {
      const __m256 scale = _mm256_mul_ps(_mm256_set1_ps(row_scale[i]), _mm256_loadu_ps(cs));
      const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(sums), scale);
      _mm256_storeu_ps(o, accumulate ? _mm256_add_ps(_mm256_loadu_ps(o), v) : v);
      return;
    }
    alignas(32) int32_t last[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(last), sums);
    for (int64_t q = 0; q < count; ++q) {
      const float v = float(last[q]) * (row_scale[i] * cs[q]);
      o[q] = accumulate ? o[q] + v : v;
    }
  }
};

/// The sums of rows i0..i0 + R of a (int16, lda apart, `a` at row i0) against the C panels from `b` (panel_bytes
/// apart), columns j0.. of the call, R <= 4, C <= 2; `cols` are the valid columns from j0 (the last panel may be
/// partial). The accumulators are named variables: GCC 12 keeps an array of them in registers but copies each one
/// at every step (a third more instructions).
template <int R, int C, class Sink>
MOE_AVX2_EXACT inline void s8_panel_tile(int64_t pairs, const int16_t* a, int64_t lda, const int8_t* b,
                                         int64_t panel_bytes, int64_t i0, int64_t j0, int64_t cols, const Sink& sink) {
  static_assert(R >= 1 && R <= 4 && C >= 1 && C <= 2);
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  auto row = [](const int16_t* pair, __m256i b0, __m256i b1, __m256i& acc0, __m256i& acc1) MOE_AVX2_EXACT {
    int32_t v;
    std::memcpy(&v, pair, sizeof v);
    const __m256i av = _mm256_set1_epi32(v);
    acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(av, b0));
    if constexpr (C > 1) acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(av, b1));
  };
  for (int64_t t = 0; t < pairs; ++t) {
    const __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * t)));
    const __m256i b1 =
        C > 1 ? _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + panel_bytes + 16 * t))) : b0;
    row(a + 2 * t, b0, b1, c00, c01);
    if constexpr (R > 1) row(a + lda + 2 * t, b0, b1, c10, c11);
    if constexpr (R > 2) row(a + 2 * lda + 2 * t, b0, b1, c20, c21);
    if constexpr (R > 3) row(a + 3 * lda + 2 * t, b0, b1, c30, c31);
  }
  const __m256i acc[4][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < C && 8 * q < cols; ++q)
      sink.put(i0 + r, j0 + 8 * q, acc[r][q], std::min<int64_t>(8, cols - 8 * q));
}

/// All m rows against C panels from `b`: blocks of 4 rows, then the last 1-3.
template <int C, class Sink>
MOE_AVX2_EXACT void s8_panel_rows(int64_t m, int64_t pairs, const int16_t* a, int64_t lda, const int8_t* b,
                                  int64_t panel_bytes, int64_t j0, int64_t cols, const Sink& sink) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) s8_panel_tile<4, C>(pairs, a + i * lda, lda, b, panel_bytes, i, j0, cols, sink);
  const int64_t rest = m - i;
  if (rest == 3) s8_panel_tile<3, C>(pairs, a + i * lda, lda, b, panel_bytes, i, j0, cols, sink);
  if (rest == 2) s8_panel_tile<2, C>(pairs, a + i * lda, lda, b, panel_bytes, i, j0, cols, sink);
  if (rest == 1) s8_panel_tile<1, C>(pairs, a + i * lda, lda, b, panel_bytes, i, j0, cols, sink);
}

/// Panels p0..p1 in pairs (each panel pair used for all rows while it is in L1), then the odd one.
template <class Sink>
MOE_AVX2_EXACT void s8_panels(int64_t m, int64_t n, int64_t k, const int16_t* a, int64_t lda, const int8_t* panels,
                              int64_t p0, int64_t p1, const Sink& sink) {
  const int64_t pairs = (k + 1) / 2, panel_bytes = pairs * 16;
  int64_t p = p0;
  for (; p + 2 <= p1; p += 2)
    s8_panel_rows<2>(m, pairs, a, lda, panels + p * panel_bytes, panel_bytes, 8 * (p - p0), n - 8 * p, sink);
  if (p < p1) s8_panel_rows<1>(m, pairs, a, lda, panels + p * panel_bytes, panel_bytes, 8 * (p - p0), n - 8 * p, sink);
}
}  // namespace

void gemm_s8_panels(int64_t m, int64_t n, int64_t k, const int16_t* a, int64_t lda, const int8_t* panels, int64_t p0,
                    int64_t p1, int32_t* c, int64_t ldc) {
  s8_panels(m, n, k, a, lda, panels, p0, p1, Int32Sink{c, ldc});
}

void gemm_s8_panels_scaled(int64_t m, int64_t n, int64_t k, const int16_t* a, int64_t lda, const int8_t* panels,
                           int64_t p0, int64_t p1, const float* row_scale, const float* col_scale, float* out,
                           int64_t ldo, bool accumulate) {
  s8_panels(m, n, k, a, lda, panels, p0, p1, ScaledSink{out, ldo, row_scale, col_scale, accumulate});
}

void widen_s8_pairs(int64_t m, int64_t k, const int8_t* a, int64_t lda, int16_t* out) {
  const int64_t width = 2 * ((k + 1) / 2);
  for (int64_t i = 0; i < m; ++i) {
    int16_t* o = out + i * width;
    for (int64_t p = 0; p < k; ++p) o[p] = a[i * lda + p];
    for (int64_t p = k; p < width; ++p) o[p] = 0;
  }
}

}  // namespace moe::cpu
