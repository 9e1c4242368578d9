// int8_gemm.h: weight quantization and the int8 product.
#include "ops/int8_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "common/cpu_threads.h"
#include "ops/cpu_gemm.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_math.h"

namespace moe {

namespace {
// Rounds to the nearest integer, ties to even, as std::nearbyint does in the default rounding mode, for
// |v| < 2^22: adding and subtracting 1.5 x 2^23 leaves no fraction bits. Plain additions, so the loops
// vectorise; std::nearbyint is a libm call per element on the baseline x86-64 this is built for (13% of an
// int8 decoding profile at d 512). Exactness: tests/ops/int8_gemm_test.cpp ("rounding").
float round_even(float v) {
  constexpr float kMagic = 12582912.f;  // 1.5 x 2^23
  return (v + kMagic) - kMagic;
}
int8_t round_to_int8(float v, float limit = 127.f) {
  return static_cast<int8_t>(std::clamp(round_even(v), -limit, limit));
}
float scale_of(float amax) { return amax / 127.f; }
constexpr auto kWeightMax = float(kInt8WeightMax);
float weight_scale_of(float amax) { return amax / kWeightMax; }

/// One activation row quantized: q_p = round(x_p 127 / amax), clamped to [-127, 127]; returns amax = max |x_p|.
float quantize_row(const float* x, int64_t k, int8_t* q) {
  float lanes[cpu::kLanes] = {};  // max |x_p| in lanes, so that it vectorises (max is exact: any order agrees)
  int64_t p = 0;
  for (; p + cpu::kLanes <= k; p += cpu::kLanes)
    for (int l = 0; l < cpu::kLanes; ++l) lanes[l] = std::max(lanes[l], std::abs(x[p + l]));
  for (; p < k; ++p) lanes[0] = std::max(lanes[0], std::abs(x[p]));
  const float amax = *std::max_element(lanes, lanes + cpu::kLanes);
  const float inv = amax > 0 ? 127.f / amax : 0.f;
  for (p = 0; p < k; ++p) q[p] = round_to_int8(x[p] * inv);
  return amax;
}

MOE_AVX512_BEGIN
/// 16 products x_p (127 / amax) rounded to the nearest even integer, clamped to [-127, 127], as bytes.
MOE_AVX512 inline __m128i to_int8_avx512(__m512 x, __m512 inv) {
  const __m512 v = _mm512_roundscale_ps(_mm512_mul_ps(x, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm512_cvtsepi32_epi8(
      _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.f)), _mm512_set1_ps(127.f))));
}

/// quantize_row on AVX-512F, 16 elements at a time: the same products, and rounding to the nearest even
/// integer as round_even, so the same bytes.
MOE_AVX512 float quantize_row_avx512(const float* x, int64_t k, int8_t* q) {
  const int64_t full = k & ~int64_t(15);
  const __mmask16 tail = __mmask16((1u << (k - full)) - 1);
  __m512 m = _mm512_setzero_ps();
  // max(|x|, m) keeps m where |x| is NaN, as std::max(amax, |x|) does
  for (int64_t p = 0; p < full; p += 16) m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + p)), m);
  if (tail) m = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(tail, x + full)), m);
  const float amax = _mm512_reduce_max_ps(m);
  const __m512 inv = _mm512_set1_ps(amax > 0 ? 127.f / amax : 0.f);
  for (int64_t p = 0; p < full; p += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + p), to_int8_avx512(_mm512_loadu_ps(x + p), inv));
  if (tail) {  // (a masked byte store needs AVX-512BW)
    alignas(16) int8_t last[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(last), to_int8_avx512(_mm512_maskz_loadu_ps(tail, x + full), inv));
    std::copy(last, last + (k - full), q + full);
  }
  return amax;
}
MOE_AVX512_END

/// 8 products x_p (127 / amax), rounded to the nearest even integer, clamped to [-127, 127], as int32.
MOE_AVX2_EXACT inline __m256i to_int32_avx2(__m256 x, __m256 inv) {
  const __m256 v = _mm256_round_ps(_mm256_mul_ps(x, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.f)), _mm256_set1_ps(127.f)));
}

/// quantize_row on AVX2, 32 elements at a time and the tail by the portable loop: the same products and rounding,
/// so the same bytes (the autovectorised loop it replaced was 4% of an int8 decoding profile).
MOE_AVX2_EXACT float quantize_row_avx2(const float* x, int64_t k, int8_t* q) {
  const __m256 no_sign = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const int64_t full8 = k & ~int64_t(7), full32 = k & ~int64_t(31);
  __m256 m = _mm256_setzero_ps();
  // max(|x|, m) keeps m where |x| is NaN, as std::max(amax, |x|) does
  for (int64_t p = 0; p < full8; p += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + p), no_sign), m);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float amax = *std::max_element(lanes, lanes + 8);
  for (int64_t p = full8; p < k; ++p) amax = std::max(amax, std::abs(x[p]));
  const float inv_s = amax > 0 ? 127.f / amax : 0.f;
  const __m256 inv = _mm256_set1_ps(inv_s);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // the packs work within 128-bit halves
  for (int64_t p = 0; p < full32; p += 32) {
    const __m256i a = to_int32_avx2(_mm256_loadu_ps(x + p), inv), b = to_int32_avx2(_mm256_loadu_ps(x + p + 8), inv);
    const __m256i c = to_int32_avx2(_mm256_loadu_ps(x + p + 16), inv);
    const __m256i d = to_int32_avx2(_mm256_loadu_ps(x + p + 24), inv);
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + p), _mm256_permutevar8x32_epi32(bytes, order));
  }
  for (int64_t p = full32; p < k; ++p) q[p] = round_to_int8(x[p] * inv_s);
  return amax;
}
}  // namespace

Int8Matrix quantize_int8(const Tensor& weight, bool per_row) {
  const Shape& s = weight.shape();
  MOE_CHECK(weight.dtype() == DType::f32 && weight.device().is_cpu(),
            "quantize_int8: the weight must be f32 on the CPU");
  MOE_CHECK(s.ndim() == 3 ? !per_row : s.ndim() == 2,
            "quantize_int8: a weight [K, N], [E, K, N] or [N, K] per row, got ", s, per_row ? " per row" : "");
  Int8Matrix m;
  m.shape = s;
  m.per_row = per_row;
  const int64_t experts = m.experts(), k = m.k(), n = m.n();
  const float* w = weight.data<float>();
  m.q.resize(static_cast<size_t>(s.numel()));
  m.scale.resize(static_cast<size_t>(experts * n));
  // Channel j of expert e is row j of a [N, K] weight (per_row) or column j of a [K, N] one. Columns are
  // visited row by row (contiguous), which gives the same maxima and bytes as one column at a time.
  for (int64_t e = 0; e < experts; ++e) {
    float* sc = m.scale.data() + e * n;
    if (per_row) {
      for (int64_t j = 0; j < n; ++j) {
        const float* row = w + j * k;
        float amax = 0;
        for (int64_t kk = 0; kk < k; ++kk) amax = std::max(amax, std::abs(row[kk]));
        sc[j] = weight_scale_of(amax);
        for (int64_t kk = 0; kk < k; ++kk)
          m.q[static_cast<size_t>(j * k + kk)] = sc[j] > 0 ? round_to_int8(row[kk] / sc[j], kWeightMax) : 0;
      }
      continue;
    }
    std::vector<float> amax(static_cast<size_t>(n), 0.f);
    for (int64_t kk = 0; kk < k; ++kk) {
      const float* row = w + (e * k + kk) * n;
      for (int64_t j = 0; j < n; ++j)
        amax[static_cast<size_t>(j)] = std::max(amax[static_cast<size_t>(j)], std::abs(row[j]));
    }
    for (int64_t j = 0; j < n; ++j) sc[j] = weight_scale_of(amax[static_cast<size_t>(j)]);
    for (int64_t kk = 0; kk < k; ++kk) {
      const float* row = w + (e * k + kk) * n;
      int8_t* q = m.q.data() + (e * k + kk) * n;
      for (int64_t j = 0; j < n; ++j) q[j] = sc[j] > 0 ? round_to_int8(row[j] / sc[j], kWeightMax) : 0;
    }
  }
  return m;
}

Tensor dequantize_int8(const Int8Matrix& m) {
  Tensor out = Tensor::empty(m.shape, DType::f32, Device::cpu());
  const auto numel = static_cast<int64_t>(m.q.size());
  dequantize_int8_strided(m, out.data<float>(), 1, numel, numel, 0);
  return out;
}

void dequantize_int8_strided(const Int8Matrix& m, float* out, int64_t outer, int64_t len, int64_t full, int64_t off) {
  const int64_t k = m.k(), n = m.n();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < len; ++i) {
      const int64_t idx = o * full + off + i;
      const int64_t j = m.per_row ? idx / k : idx % n, e = m.per_row ? 0 : idx / (k * n);
      out[o * len + i] = float(m.q[static_cast<size_t>(idx)]) * m.scale[static_cast<size_t>(e * n + j)];
    }
}

void pack_int8_panels(Int8Matrix& m) {
  m.panels.clear();
  const int64_t k = m.k(), n = m.n(), bytes = cpu::s8_panels_bytes(k, n);
  if (!cpu::s8_panels_run() || !cpu::s8_panels_exact_for(m.q.data(), 1, int64_t(m.q.size()), 0)) return;
  m.panels.resize(static_cast<size_t>(m.experts() * bytes));
  for (int64_t e = 0; e < m.experts(); ++e)
    cpu::pack_s8_panels(m.per_row, k, n, m.q.data() + e * k * n, m.per_row ? k : n, m.panels.data() + e * bytes);
}

void Int8Weights::add(const Tensor& f32_weight, Int8Matrix m) {
  MOE_CHECK(f32_weight.shape() == m.shape, "Int8Weights: weight ", f32_weight.shape(), " and its int8 form ", m.shape,
            " differ");
  pack_int8_panels(m);
  by_data_[f32_weight.raw()] = std::move(m);
}

const Int8Matrix* Int8Weights::find(const Tensor& w) const {
  if (w.numel() == 0 || w.dtype() != DType::f32) return nullptr;
  auto it = by_data_.find(w.raw());
  return it != by_data_.end() && it->second.shape == w.shape() ? &it->second : nullptr;
}

size_t Int8Weights::bytes() const {
  size_t b = 0;
  for (const auto& [p, m] : by_data_) b += m.q.size() + m.panels.size() + m.scale.size() * sizeof(float);
  return b;
}

namespace cpu {
void int8_matmul(const float* x, int64_t m, const Int8Matrix& w, int64_t e, float* out, bool accumulate) {
  const int64_t k = w.k(), n = w.n();
  MOE_CHECK(k < 131000, "int8 GEMM: an inner dimension of ", k,
            " could overflow the int32 sums (k x 255 x 64 < 2^31, the AVX2 kernel's, needs k < 131,000)");
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) std::fill(out, out + m * n, 0.f);
    return;
  }
  // With the expert's panels (packed once by Int8Weights::add where the AVX2 kernel runs) the rows also as unsigned
  // bytes for the kernel; without them (a matrix outside a set) gemm_s8s8s32 packs what it multiplies. Scratch
  // from the caching allocator: large std::vectors were fresh pages at every call (5% of a decoding profile in the
  // kernel's page zeroing).
  const int8_t* qb = w.q.data() + e * k * n;
  const int64_t ldb = w.per_row ? k : n;
  const bool panels = cpu::s8_panels_run() && !w.panels.empty();
  const int64_t width = cpu::s8_quads_width(k);
  const Tensor qa_t = Tensor::empty(Shape{m * k}, DType::u8, Device::cpu());
  const Tensor sa_t = Tensor::empty(Shape{m}, DType::f32, Device::cpu());
  const Tensor quads_t = Tensor::empty(Shape{panels ? m * width : 0}, DType::u8, Device::cpu());
  auto* qa = reinterpret_cast<int8_t*>(qa_t.raw());
  float* sa = sa_t.data<float>();
  auto* quads = reinterpret_cast<uint8_t*>(quads_t.raw());
  parallel_for(m, std::max<int64_t>(1, kElementsPerThread / k), [&](int64_t lo, int64_t hi) {
    const CpuIsa isa = cpu_isa();  // every set gives the same bytes
    for (int64_t i = lo; i < hi; ++i)
      sa[i] = scale_of(isa == CpuIsa::avx512 ? quantize_row_avx512(x + i * k, k, qa + i * k)
                       : isa == CpuIsa::avx2 ? quantize_row_avx2(x + i * k, k, qa + i * k)
                                             : quantize_row(x + i * k, k, qa + i * k));
    if (panels) cpu::s8_to_u8_quads(hi - lo, k, qa + lo * k, k, quads + lo * width);
  });
  const float* sw = w.scale.data() + e * n;
  const int8_t* pb = panels ? w.panels.data() + e * cpu::s8_panels_bytes(k, n) : nullptr;
  auto block = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {  // c0 a multiple of 8 with panels
    const int64_t rows = r1 - r0, cols = c1 - c0;
    if (panels) {  // y = float(sum) (s_a s_w) in the kernel
      cpu::gemm_s8_panels_scaled(rows, n, k, quads + r0 * width, width, pb, c0 / 8, (c1 + 7) / 8, sa + r0, sw + c0,
                                 out + r0 * n + c0, n, accumulate);
      return;
    }
    thread_local std::vector<int32_t> acc;
    acc.resize(static_cast<size_t>(rows * cols));
    gemm_s8s8s32(w.per_row, rows, cols, k, qa + r0 * k, k, w.per_row ? qb + c0 * k : qb + c0, ldb, acc.data(), cols);
    run_wide([&] {
      for (int64_t i = 0; i < rows; ++i) {
        const float si = sa[r0 + i];
        float* oi = out + (r0 + i) * n + c0;
        const int32_t* ai = acc.data() + i * cols;
        for (int64_t j = 0; j < cols; ++j) {
          const float v = float(ai[j]) * (si * sw[c0 + j]);
          oi[j] = accumulate ? oi[j] + v : v;
        }
      }
    });
  };
  constexpr int64_t kMinOpsPerThread = int64_t(1) << 22;  // VNNI runs ~4x the f32 rate: matmul.cpp's 2^20, scaled
  if (m >= n) {
    parallel_for(m, std::max<int64_t>(4, kMinOpsPerThread / (2 * n * k)),
                 [&](int64_t lo, int64_t hi) { block(lo, hi, 0, n); });
    return;
  }
  const int64_t unit = panels ? 8 : 1;  // columns split in whole panels
  parallel_for((n + unit - 1) / unit, std::max<int64_t>(64 / unit, kMinOpsPerThread / (2 * m * k * unit)),
               [&](int64_t lo, int64_t hi) { block(0, m, lo * unit, std::min(hi * unit, n)); });
}
}  // namespace cpu

double int8_error_bound(const float* x_row, int64_t k, const Int8Matrix& w, int64_t e, int64_t j) {
  float amax = 0;
  for (int64_t p = 0; p < k; ++p) amax = std::max(amax, std::abs(x_row[p]));
  const double sa = scale_of(amax), sw = w.scale[static_cast<size_t>(e * w.n() + j)];
  double bound = 0;
  for (int64_t p = 0; p < k; ++p) {
    const int64_t idx = w.per_row ? j * k + p : (e * k + p) * w.n() + j;
    bound += std::abs(x_row[p]) * sw / 2 + std::abs(double(w.q[static_cast<size_t>(idx)]) * sw) * sa / 2;
  }
  return bound;
}

}  // namespace moe
