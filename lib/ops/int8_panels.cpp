// cpu_gemm.h: the AVX2 int8 product over a weight packed once into panels (moe's own kernel on CPUs with AVX2 and
// without AVX-512 VNNI, where oneDNN's product saturates; ops/cpu_gemm.h).
//   Packing: op(b) [k, n] as panels of 8 columns; panel p holds, for each quad t of rows 4t..4t + 3, the 32 bytes
//   (b[4t][8p + c], .., b[4t + 3][8p + c]) for c = 0..7, zeros past k and n, then the 8 int32 128 sum_k b[k][8p + c]:
//   ceil(n / 8) (ceil(k / 4) 32 + 32) bytes.
//   Product: a row as unsigned bytes u = a + 128 (s8_to_u8_quads), 4 of them broadcast; vpmaddubsw gives the 16
//   int16 u_4t b[4t][c] + u_4t+1 b[4t+1][c] (and the next two), exact while |b| <= 64 (2 x 255 x 64 < 2^15: the
//   quantized weights' range, kInt8WeightMax in ops/int8_gemm.h); vpmaddwd against ones sums each pair into the 8
//   int32 lanes; added over t, minus 128 sum_k b[k][c] (kept in the panel), that is sum_k a_k b[k][c], exact while
//   the sums fit int32 (the callers' k < 131,000). Stored as int32, or scaled in the store as ops/int8_gemm.h's
//   portable loop rounds.
// Register blocking: R rows x C panels of accumulators, each panel load used for R rows, each broadcast for C
// panels: per quad of k, C loads + R broadcasts + 3 R C integer ops for 32 R C products (the int16 kernel it
// replaced, vpmaddwd over pairs widened at each load, made 4.5 per 32 products; the scalar loop before it ~3x that).
// Covered by tests/ops/cpu_gemm_test.cpp ("the int8 product is exact") and tests/ops/int8_gemm_test.cpp ("every
// instruction set gives the portable quantized products").
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "ops/cpu_gemm.h"
#include "ops/cpu_isa.h"

namespace moe::cpu {

int64_t s8_panels_bytes(int64_t k, int64_t n) { return (n + 7) / 8 * ((k + 3) / 4 * 32 + 32); }

bool s8_panels_exact_for(const int8_t* b, int64_t rows, int64_t cols, int64_t ldb) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (b[r * ldb + c] < -64 || b[r * ldb + c] > 64) return false;
  return true;
}

void pack_s8_panels(bool tb, int64_t k, int64_t n, const int8_t* b, int64_t ldb, int8_t* out) {
  const int64_t quads = (k + 3) / 4;
  auto at = [&](int64_t p, int64_t j) -> int8_t {
    if (p >= k || j >= n) return 0;
    return tb ? b[j * ldb + p] : b[p * ldb + j];
  };
  for (int64_t panel = 0; panel < (n + 7) / 8; ++panel) {
    int32_t sums[8] = {};
    for (int64_t t = 0; t < quads; ++t, out += 32)
      for (int c = 0; c < 8; ++c)
        for (int r = 0; r < 4; ++r) {
          out[4 * c + r] = at(4 * t + r, 8 * panel + c);
          sums[c] += out[4 * c + r];
        }
    for (int c = 0; c < 8; ++c) sums[c] *= 128;
    std::memcpy(out, sums, sizeof sums);
    out += sizeof sums;
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

/// The sums of rows i0..i0 + R of a (unsigned bytes, lda apart, `a` at row i0) against the C panels from `b`
/// (panel_bytes apart), columns j0.. of the call, R <= 4, C <= 2; `cols` are the valid columns from j0 (the last
/// panel may be partial). The accumulators are named variables: GCC 12 keeps an array of them in registers but
/// copies each one at every step (a third more instructions).
template <int R, int C, class Sink>
MOE_AVX2_EXACT inline void s8_panel_tile(int64_t quads, const uint8_t* a, int64_t lda, const int8_t* b,
                                         int64_t panel_bytes, int64_t i0, int64_t j0, int64_t cols, const Sink& sink) {
  static_assert(R >= 1 && R <= 4 && C >= 1 && C <= 2);
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  const __m256i ones = _mm256_set1_epi16(1);
  auto row = [&ones](const uint8_t* quad, __m256i b0, __m256i b1, __m256i& acc0, __m256i& acc1) MOE_AVX2_EXACT {
    int32_t v;
    std::memcpy(&v, quad, sizeof v);
    const __m256i av = _mm256_set1_epi32(v);
    acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
    if constexpr (C > 1) acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
  };
  for (int64_t t = 0; t < quads; ++t) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32 * t));
    const __m256i b1 = C > 1 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + panel_bytes + 32 * t)) : b0;
    row(a + 4 * t, b0, b1, c00, c01);
    if constexpr (R > 1) row(a + lda + 4 * t, b0, b1, c10, c11);
    if constexpr (R > 2) row(a + 2 * lda + 4 * t, b0, b1, c20, c21);
    if constexpr (R > 3) row(a + 3 * lda + 4 * t, b0, b1, c30, c31);
  }
  const __m256i acc[4][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
  for (int q = 0; q < C && 8 * q < cols; ++q) {
    const __m256i offset = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + q * panel_bytes + 32 * quads));
    for (int r = 0; r < R; ++r)
      sink.put(i0 + r, j0 + 8 * q, _mm256_sub_epi32(acc[r][q], offset), std::min<int64_t>(8, cols - 8 * q));
  }
}

/// All m rows against C panels from `b`: blocks of 4 rows, then the last 1-3.
template <int C, class Sink>
MOE_AVX2_EXACT void s8_panel_rows(int64_t m, int64_t quads, const uint8_t* a, int64_t lda, const int8_t* b,
                                  int64_t panel_bytes, int64_t j0, int64_t cols, const Sink& sink) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) s8_panel_tile<4, C>(quads, a + i * lda, lda, b, panel_bytes, i, j0, cols, sink);
  const int64_t rest = m - i;
  if (rest == 3) s8_panel_tile<3, C>(quads, a + i * lda, lda, b, panel_bytes, i, j0, cols, sink);
  if (rest == 2) s8_panel_tile<2, C>(quads, a + i * lda, lda, b, panel_bytes, i, j0, cols, sink);
  if (rest == 1) s8_panel_tile<1, C>(quads, a + i * lda, lda, b, panel_bytes, i, j0, cols, sink);
}

/// Panels p0..p1 in pairs (each panel pair used for all rows while it is in L1), then the odd one.
template <class Sink>
MOE_AVX2_EXACT void s8_panels(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* panels,
                              int64_t p0, int64_t p1, const Sink& sink) {
  const int64_t quads = (k + 3) / 4, panel_bytes = quads * 32 + 32;
  int64_t p = p0;
  for (; p + 2 <= p1; p += 2)
    s8_panel_rows<2>(m, quads, a, lda, panels + p * panel_bytes, panel_bytes, 8 * (p - p0), n - 8 * p, sink);
  if (p < p1) s8_panel_rows<1>(m, quads, a, lda, panels + p * panel_bytes, panel_bytes, 8 * (p - p0), n - 8 * p, sink);
}
}  // namespace

void gemm_s8_panels(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* panels, int64_t p0,
                    int64_t p1, int32_t* c, int64_t ldc) {
  s8_panels(m, n, k, a, lda, panels, p0, p1, Int32Sink{c, ldc});
}

void gemm_s8_panels_scaled(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* panels,
                           int64_t p0, int64_t p1, const float* row_scale, const float* col_scale, float* out,
                           int64_t ldo, bool accumulate) {
  s8_panels(m, n, k, a, lda, panels, p0, p1, ScaledSink{out, ldo, row_scale, col_scale, accumulate});
}

void s8_to_u8_quads(int64_t m, int64_t k, const int8_t* a, int64_t lda, uint8_t* out) {
  const int64_t width = s8_quads_width(k);
  for (int64_t i = 0; i < m; ++i) {
    uint8_t* o = out + i * width;
    for (int64_t p = 0; p < k; ++p) o[p] = uint8_t(a[i * lda + p] + 128);
    for (int64_t p = k; p < width; ++p) o[p] = 128;
  }
}

}  // namespace moe::cpu
