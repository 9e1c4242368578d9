// The instructions of cuda/common/ptx.cuh against layout tables written here from the PTX ISA (9.7.14.5.8
// mma.m16n8k16, 9.7.14.5.15 ldmatrix, 9.7.9.25 cp.async, 9.7.15.5 wgmma's register fragments and
// shared-memory layouts, 5.5 tensor copies and their swizzle modes), not from the emulator's code: on
// the emulator in CI, and on a GPU (scripts/gpu-check.sh runs this first), where agreement shows that
// the emulator's layouts are the hardware's. Inputs are small integers, so every product and sum is
// exact in any order and results are compared exactly. The probe kernels are tests/gpu/ptx_probes.cu.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "gpu/ptx_probes.h"
#include "tensor/dtype.h"

using namespace moe::ptx_probe;

namespace {
// ---- PTX ISA 9.7.14.5.8, mma.m16n8k16 with .f16/.bf16: groupID = laneid >> 2, threadID_in_group = laneid % 4.
int group_id(int lane) { return lane >> 2; }
int tig(int lane) { return lane % 4; }
int a_row(int lane, int i) { return (i < 2 || (i >= 4 && i < 6)) ? group_id(lane) : group_id(lane) + 8; }
int a_col(int lane, int i) { return tig(lane) * 2 + (i & 1) + (i >= 4 ? 8 : 0); }
int b_row(int lane, int i) { return tig(lane) * 2 + (i & 1) + (i >= 2 ? 8 : 0); }
int b_col(int lane, int /*i*/) { return group_id(lane); }
int c_row(int lane, int i) { return i < 2 ? group_id(lane) : group_id(lane) + 8; }
int c_col(int lane, int i) { return tig(lane) * 2 + (i & 1); }

uint16_t bits_of(float v, Elem e) { return e == Elem::bf16 ? moe::f32_to_bf16_bits(v) : moe::f32_to_f16_bits(v); }
uint32_t pair(float lo, float hi, Elem e) { return uint32_t(bits_of(lo, e)) | uint32_t(bits_of(hi, e)) << 16; }

std::vector<float> small_ints(size_t n, uint32_t seed, int range = 3) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> d(-range, range);
  std::vector<float> v(n);
  for (float& x : v) x = float(d(g));
  return v;
}

bool hopper() {
  static const bool yes = has_sm90a();
  if (!yes) WARN("this build has no sm_90a code: the Hopper instruction probes are not run");
  return yes;
}

// ---- PTX ISA 9.7.15.5.1.2: wgmma's canonical shared-memory layouts, for 16-bit elements and one k16
// step. A core matrix is 8 rows of 16 bytes. Without swizzling, K-major: core matrix (mn / 8, k / 8)
// at start + (mn / 8) SBO + (k / 8) LBO, its rows the 8 MN indices; MN-major: core matrix (mn / 8, k / 8)
// at start + (mn / 8) SBO + (k / 8) LBO, its rows the 8 K indices. Swizzled with span S (32, 64, 128
// bytes): K-major, an atom of 8 rows of S bytes (row mn % 8, k along the row), atoms along MN every SBO;
// MN-major, an atom of 8 rows of S bytes (row k % 8, S / 2 MN indices along the row), atoms along MN
// every LBO and along K every SBO. Then every 16-byte chunk of a 128-byte line moves: its index within
// its S-byte span is XORed with (line index) mod (S / 16), the line being the address / 128.
struct Layout {
  bool mn_major;
  int span;  // 0: none
  uint32_t start, lbo, sbo;
};
size_t swizzled(size_t addr, int span) {
  if (!span) return addr;
  const size_t chunk = (addr % size_t(span)) / 16, line = addr / 128;
  const size_t moved = chunk ^ (line % size_t(span / 16));
  return addr - chunk * 16 + moved * 16;
}
size_t place(const Layout& l, int mn, int k) {
  size_t a = l.start;
  if (!l.span && !l.mn_major)
    a += size_t(mn / 8) * l.sbo + size_t(k / 8) * l.lbo + size_t(mn % 8) * 16 + size_t(k % 8) * 2;
  else if (!l.span)
    a += size_t(mn / 8) * l.sbo + size_t(k / 8) * l.lbo + size_t(k % 8) * 16 + size_t(mn % 8) * 2;
  else if (!l.mn_major)
    a += size_t(mn / 8) * l.sbo + size_t(mn % 8) * size_t(l.span) + size_t(k) * 2;
  else {
    const int per_row = l.span / 2;  // MN indices in one row of the atom
    a += size_t(mn / per_row) * l.lbo + size_t(k / 8) * l.sbo + size_t(k % 8) * size_t(l.span) +
         size_t(mn % per_row) * 2;
  }
  return swizzled(a, l.span);
}
/// A layout of `rows` MN indices x 16 K, starting at `start`, with the offsets a dense tile would use.
Layout dense_layout(bool mn_major, int span, int rows, uint32_t start) {
  if (!span) return mn_major ? Layout{true, 0, start, uint32_t(rows) * 16, 128} : Layout{false, 0, start, 128, 256};
  if (!mn_major) return Layout{false, span, start, 16, uint32_t(8 * span)};
  const uint32_t atoms = uint32_t((rows + span / 2 - 1) / (span / 2));  // along MN
  return Layout{true, span, start, uint32_t(8 * span), uint32_t(8 * span) * atoms};
}
}  // namespace

TEST_CASE("mma.m16n8k16 matches the PTX ISA's fragment layouts", "[gpu][ptx]") {
  for (Elem e : {Elem::bf16, Elem::f16}) {
    const std::vector<float> A = small_ints(16 * 16, 1), B = small_ints(16 * 8, 2), C = small_ints(16 * 8, 3, 20);
    std::vector<uint32_t> a(128), b(64);
    std::vector<float> c(128);
    for (int l = 0; l < 32; ++l) {
      for (int r = 0; r < 4; ++r)
        a[size_t(4 * l + r)] = pair(A[size_t(a_row(l, 2 * r) * 16 + a_col(l, 2 * r))],
                                    A[size_t(a_row(l, 2 * r + 1) * 16 + a_col(l, 2 * r + 1))], e);
      for (int r = 0; r < 2; ++r)
        b[size_t(2 * l + r)] = pair(B[size_t(b_row(l, 2 * r) * 8 + b_col(l, 2 * r))],
                                    B[size_t(b_row(l, 2 * r + 1) * 8 + b_col(l, 2 * r + 1))], e);
      for (int i = 0; i < 4; ++i) c[size_t(4 * l + i)] = C[size_t(c_row(l, i) * 8 + c_col(l, i))];
    }
    const std::vector<float> d = mma(e, a, b, c);
    int wrong = 0;
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 4; ++i) {
        const int row = c_row(l, i), col = c_col(l, i);
        float want = C[size_t(row * 8 + col)];
        for (int k = 0; k < 16; ++k) want += A[size_t(row * 16 + k)] * B[size_t(k * 8 + col)];
        wrong += d[size_t(4 * l + i)] != want;
      }
    INFO((e == Elem::bf16 ? "bf16" : "f16"));
    CHECK(wrong == 0);
  }
}

TEST_CASE("ldmatrix x1/x2/x4 with and without .trans matches the PTX ISA", "[gpu][ptx]") {
  // Matrix j's row r at element offset 200 j + 24 r (16-byte aligned rows, padding between).
  std::vector<uint16_t> image(800);
  for (size_t i = 0; i < image.size(); ++i) image[i] = uint16_t(i);
  std::vector<int> rows(32);
  for (int l = 0; l < 32; ++l) rows[size_t(l)] = 200 * (l / 8) + 24 * (l % 8);
  for (int matrices : {1, 2, 4})
    for (bool trans : {false, true}) {
      const std::vector<uint32_t> r = ldmatrix(matrices, trans, image, rows);
      int wrong = 0;
      for (int l = 0; l < 32; ++l)
        for (int j = 0; j < matrices; ++j)
          for (int h = 0; h < 2; ++h) {
            // Each thread receives row laneid / 4, columns 2 (laneid % 4) + {0, 1}; .trans: the transpose.
            const int row = trans ? 2 * (l % 4) + h : l / 4, col = trans ? l / 4 : 2 * (l % 4) + h;
            const uint16_t want = uint16_t(200 * j + 24 * row + col);
            wrong += uint16_t(r[size_t(l * matrices + j)] >> (16 * h)) != want;
          }
      INFO("x" << matrices << (trans ? ".trans" : ""));
      CHECK(wrong == 0);
    }
}

TEST_CASE("cp.async copies, zero-fills and lands by commit group", "[gpu][ptx]") {
  std::vector<uint8_t> src(512);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 7 + 1);
  struct Case {
    int bytes;
    bool global;
    int src_bytes;
  };
  for (const Case cs :
       {Case{4, false, 4}, Case{8, false, 3}, Case{16, false, 16}, Case{16, true, 5}, Case{16, true, 0}}) {
    const CpAsyncResult r = cp_async(cs.bytes, cs.global, cs.src_bytes, src);
    int wrong = 0;
    for (int t = 0; t < 32; ++t)
      for (int b = 0; b < cs.bytes; ++b) {
        const size_t i = size_t(t * cs.bytes + b);
        const uint8_t want = b < cs.src_bytes ? src[i] : 0;
        wrong += r.all[i] != want;
        if (t % 3 == 0) wrong += r.first_group[i] != want;  // group 0 landed at wait_group 2
      }
    INFO(cs.bytes << " bytes" << (cs.global ? " .cg" : " .ca") << ", source size " << cs.src_bytes);
    CHECK(wrong == 0);
  }
}

TEST_CASE("wgmma.mma_async matches the PTX ISA's fragments and shared-memory layouts", "[gpu][ptx][hopper]") {
  if (!hopper()) return;
  uint32_t seed = 10;
  struct Operands {
    bool a_regs, a_mn, b_mn;
    int a_span, b_span;
  };
  const Operands kinds[] = {{false, false, false, 0, 0},  {false, false, false, 128, 128}, {false, true, true, 0, 0},
                            {false, true, false, 64, 32}, {false, false, true, 32, 64},    {true, false, false, 0, 128},
                            {true, false, true, 0, 128},  {false, true, true, 128, 128}};
  for (int n : wgmma_shapes())
    for (Elem e : {Elem::bf16, Elem::f16})
      for (const Operands& k : kinds)
        for (bool accumulate : {true, false}) {
          const std::vector<float> A = small_ints(64 * 16, seed++), B = small_ints(16 * size_t(n), seed++);
          const std::vector<float> C = small_ints(64 * size_t(n), seed++, 50);
          const Layout la = dense_layout(k.a_mn, k.a_span, 64, 0);
          const Layout lb = dense_layout(k.b_mn, k.b_span, n, 32768);
          WgmmaCase w;
          w.elem = e, w.n = n, w.a_in_regs = k.a_regs, w.a_mn_major = k.a_mn, w.b_mn_major = k.b_mn;
          w.accumulate = accumulate;
          w.a_start = la.start, w.a_lbo = la.lbo, w.a_sbo = la.sbo, w.a_swizzle = k.a_span;
          w.b_start = lb.start, w.b_lbo = lb.lbo, w.b_sbo = lb.sbo, w.b_swizzle = k.b_span;
          w.smem.assign(32768 + 16384 * 2 + 1024, 0);
          auto put = [&](size_t at, float v) {
            const uint16_t b = bits_of(v, e);
            std::memcpy(&w.smem[at], &b, 2);
          };
          for (int m = 0; m < 64; ++m)
            for (int kk = 0; kk < 16; ++kk) put(place(la, m, kk), A[size_t(m * 16 + kk)]);
          for (int j = 0; j < n; ++j)
            for (int kk = 0; kk < 16; ++kk) put(place(lb, j, kk), B[size_t(kk * n + j)]);
          // Register fragments (9.7.15.5.1.1): warp w of the warpgroup holds rows 16 w .. 16 w + 15 of A as
          // mma.m16n8k16's A; accumulator d_i of a thread is row 16 w + groupID + 8 ((i >> 1) & 1), column
          // 8 (i >> 2) + 2 threadID_in_group + (i & 1).
          w.a_regs.resize(512);
          w.c.resize(size_t(64 * n));
          for (int t = 0; t < 128; ++t) {
            const int l = t % 32, w16 = 16 * (t / 32);
            for (int r = 0; r < 4; ++r)
              w.a_regs[size_t(4 * t + r)] = pair(A[size_t((w16 + a_row(l, 2 * r)) * 16 + a_col(l, 2 * r))],
                                                 A[size_t((w16 + a_row(l, 2 * r + 1)) * 16 + a_col(l, 2 * r + 1))], e);
            for (int i = 0; i < n / 2; ++i)
              w.c[size_t(t * (n / 2) + i)] =
                  C[size_t((w16 + group_id(l) + 8 * ((i >> 1) & 1)) * n + 8 * (i >> 2) + 2 * tig(l) + (i & 1))];
          }
          const std::vector<float> d = wgmma(w);
          int wrong = 0;
          for (int t = 0; t < 128; ++t)
            for (int i = 0; i < n / 2; ++i) {
              const int l = t % 32, row = 16 * (t / 32) + group_id(l) + 8 * ((i >> 1) & 1);
              const int col = 8 * (i >> 2) + 2 * tig(l) + (i & 1);
              float want = accumulate ? C[size_t(row * n + col)] : 0.f;
              for (int kk = 0; kk < 16; ++kk) want += A[size_t(row * 16 + kk)] * B[size_t(kk * n + col)];
              wrong += d[size_t(t * (n / 2) + i)] != want;
            }
          INFO("m64n" << n << "k16 " << (e == Elem::bf16 ? "bf16" : "f16") << (k.a_regs ? " A in registers" : "")
                      << " A " << (k.a_mn ? "MN" : "K") << "-major swizzle " << k.a_span << ", B "
                      << (k.b_mn ? "MN" : "K") << "-major swizzle " << k.b_span << (accumulate ? "" : ", scale-d 0"));
          CHECK(wrong == 0);
        }
}

namespace {
// ---- PTX ISA 5.5: a tensor copy moves the box densely, dimension 0 innermost; elements outside the
// tensor read as zero; with a swizzle mode, the 16-byte chunks move as above (the box's rows fill
// whole spans here).
std::vector<uint8_t> expected_box(const TmaCase& t, const std::vector<uint8_t>& tensor) {
  size_t count = 1;
  for (uint32_t b : t.box) count *= b;
  std::vector<uint8_t> out(count * size_t(t.elem_bytes), 0);
  for (size_t e = 0; e < count; ++e) {
    size_t rest = e, at = 0, stride = 1;
    bool inside = true;
    for (size_t d = 0; d < t.box.size(); ++d) {
      const int64_t g = int64_t(t.coords[d]) + int64_t(rest % t.box[d]);
      rest /= t.box[d];
      inside &= g >= 0 && g < int64_t(t.dims[d]);
      at += size_t(g) * stride;
      stride *= t.dims[d];
    }
    if (inside)
      std::memcpy(&out[swizzled(e * size_t(t.elem_bytes), t.swizzle)], &tensor[at * size_t(t.elem_bytes)],
                  size_t(t.elem_bytes));
  }
  return out;
}

TmaCase tma_case(int elem_bytes, std::vector<uint64_t> dims, std::vector<uint32_t> box, std::vector<int32_t> coords,
                 int swizzle) {
  TmaCase t;
  t.elem_bytes = elem_bytes, t.dims = std::move(dims), t.box = std::move(box), t.coords = std::move(coords);
  t.swizzle = swizzle;
  size_t n = size_t(elem_bytes);
  for (uint64_t d : t.dims) n *= size_t(d);
  t.tensor.resize(n);
  for (size_t i = 0; i < n; ++i) t.tensor[i] = uint8_t(i * 13 + 5);
  return t;
}
}  // namespace

TEST_CASE("TMA tensor loads of 1 to 5 dimensions, swizzled and out of bounds", "[gpu][ptx][hopper]") {
  if (!hopper()) return;
  const TmaCase cases[] = {tma_case(2, {64}, {32}, {40}, 0),                 // 1-D, past the end
                           tma_case(2, {64, 40}, {64, 16}, {0, 8}, 128),     // 2-D, 128-byte rows, 128B swizzle
                           tma_case(4, {16, 33}, {16, 8}, {0, 30}, 64),      // 64B swizzle, rows past the end
                           tma_case(2, {16, 20}, {16, 8}, {0, -3}, 32),      // 32B swizzle, negative start
                           tma_case(4, {8, 6, 5}, {8, 4, 3}, {0, 3, 3}, 0),  // 3-D
                           tma_case(2, {16, 3, 4, 5}, {8, 2, 2, 3}, {8, 2, 3, 3}, 0),            // 4-D
                           tma_case(2, {8, 3, 2, 3, 2}, {8, 2, 2, 2, 2}, {0, 2, -1, 2, 1}, 0)};  // 5-D
  for (const TmaCase& t : cases) {
    INFO(t.dims.size() << "-D, swizzle " << t.swizzle << ", coordinate 1 " << (t.coords.size() > 1 ? t.coords[1] : 0));
    CHECK(tma_load(t) == expected_box(t, t.tensor));
  }
}

TEST_CASE("TMA tensor stores and reduce-adds write the in-bounds box", "[gpu][ptx][hopper]") {
  if (!hopper()) return;
  for (bool reduce : {false, true})
    for (int elem_bytes : {4, 2}) {
      TmaCase t = tma_case(elem_bytes, {32, 12}, {32, 8}, {0, 7}, elem_bytes == 4 ? 128 : 64);
      // Small integers (f32 or bf16) so that sums are exact.
      const size_t n = t.tensor.size() / size_t(elem_bytes), boxn = 32 * 8;
      const std::vector<float> base = small_ints(n, 40, 9), add = small_ints(boxn, 41, 9);
      std::vector<uint8_t> image(boxn * size_t(elem_bytes));
      auto put = [&](std::vector<uint8_t>& v, size_t i, float x) {
        if (elem_bytes == 4)
          std::memcpy(&v[i * 4], &x, 4);
        else {
          const uint16_t b = bits_of(x, Elem::bf16);
          std::memcpy(&v[i * 2], &b, 2);
        }
      };
      for (size_t i = 0; i < n; ++i) put(t.tensor, i, base[i]);
      for (size_t i = 0; i < boxn; ++i) put(image, i, add[i]);
      const std::vector<uint8_t> got = tma_store(t, image, reduce);
      std::vector<uint8_t> want = t.tensor;
      for (size_t e = 0; e < boxn; ++e) {  // box element (e % 32, e / 32) at tensor row 7 + e / 32
        const size_t row = 7 + e / 32;
        if (row >= 12) continue;
        const size_t at = row * 32 + e % 32;
        float v;
        const size_t from = swizzled(e * size_t(elem_bytes), t.swizzle) / size_t(elem_bytes);
        v = add[from] + (reduce ? base[at] : 0.f);
        put(want, at, v);
      }
      INFO((reduce ? "reduce-add" : "store") << " of " << (elem_bytes == 4 ? "f32" : "bf16"));
      CHECK(got == want);
    }
}

TEST_CASE("a warp-specialised pipeline: mbarriers, TMA, named barriers, elect.sync, setmaxnreg", "[gpu][ptx][hopper]") {
  if (!hopper()) return;
  for (int stages : {1, 2, 3}) {
    const int tiles = 5;
    const std::vector<float> data = small_ints(size_t(512 * tiles), 50 + uint32_t(stages), 100);
    const std::vector<float> sums = pipeline(data, stages);
    REQUIRE(sums.size() == size_t(tiles));
    for (int i = 0; i < tiles; ++i) {
      float want = 0.f;
      for (int e = 0; e < 512; ++e) want += data[size_t(512 * i + e)];
      INFO(stages << " stages, tile " << i);
      CHECK(sums[size_t(i)] == want);
    }
  }
}
