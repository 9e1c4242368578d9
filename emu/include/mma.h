// CUDA emulator (emu/README.md): nvcuda::wmma for the 16x16x16 shape with 16-bit inputs (__half,
// __nv_bfloat16) and f32 accumulators. Lane l of a warp holds elements 8l .. 8l+7 of each fragment's
// row-major 16x16 tile, for every fragment kind, so an accumulator loaded from memory lines up
// element by element with one produced by mma_sync (the kernels scale accumulators that way). Loads
// and stores are the lane's own memory accesses (checked like any other); every operation checks that
// the whole warp takes part and, for loads and stores, the 256-bit pointer and 16-byte ldm alignment
// that CUDA requires. mma_sync accumulates in f32 in k order.
#pragma once
#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "moe_emu/device.h"

namespace nvcuda::wmma {

struct matrix_a;
struct matrix_b;
struct accumulator;
struct row_major;
struct col_major;
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulator implements the m16n16k16 wmma shape");
  static constexpr int num_elements = 8;
  T x[num_elements];
};

namespace detail {
MOE_EMU_INLINE int lane() {
  const ::moe_emu::Position& p = *::moe_emu::tls_position;
  return int(((p.thread.z * p.block_dim.y + p.thread.y) * p.block_dim.x + p.thread.x) & 31u);
}
/// Offset of element e of this lane in a 16x16 tile stored with leading dimension ldm.
MOE_EMU_INLINE unsigned offset(int e, unsigned ldm, bool row_major_storage) {
  const int idx = lane() * 8 + e, r = idx / 16, c = idx % 16;
  return row_major_storage ? unsigned(r) * ldm + unsigned(c) : unsigned(c) * ldm + unsigned(r);
}
template <class L>
constexpr bool is_row_major() {
  return std::is_same_v<L, row_major>;
}
}  // namespace detail

template <class Use, class T, class L>
MOE_EMU_INLINE void fill_fragment(fragment<Use, 16, 16, 16, T, L>& f, const T& v) {
  for (T& e : f.x) e = v;
}
template <class Use, class T, class L>
MOE_EMU_INLINE void fill_fragment(fragment<Use, 16, 16, 16, T, L>& f, float v) requires(!std::is_same_v<T, float>) {
  for (T& e : f.x) e = T(v);
}

template <class Use, class T, class L>
MOE_EMU_INLINE void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>, "accumulators load with a layout_t");
  ::moe_emu::wmma_converge(std::is_same_v<Use, matrix_a> ? ::moe_emu::WmmaOp::load_a : ::moe_emu::WmmaOp::load_b, p,
                           ldm, sizeof(T));
  for (int e = 0; e < 8; ++e) f.x[e] = p[detail::offset(e, ldm, detail::is_row_major<L>())];
}
MOE_EMU_INLINE void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm, layout_t l) {
  ::moe_emu::wmma_converge(::moe_emu::WmmaOp::load_c, p, ldm, sizeof(float));
  for (int e = 0; e < 8; ++e) f.x[e] = p[detail::offset(e, ldm, l == mem_row_major)];
}
MOE_EMU_INLINE void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm, layout_t l) {
  ::moe_emu::wmma_converge(::moe_emu::WmmaOp::store, p, ldm, sizeof(float));
  for (int e = 0; e < 8; ++e) p[detail::offset(e, ldm, l == mem_row_major)] = f.x[e];
}

template <class T, class LA, class LB>
MOE_EMU_INLINE void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, T, LA>& a,
                     const fragment<matrix_b, 16, 16, 16, T, LB>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
  float fa[8], fb[8], fc[8], fd[8];
  for (int e = 0; e < 8; ++e) fa[e] = float(a.x[e]), fb[e] = float(b.x[e]), fc[e] = c.x[e];
  ::moe_emu::wmma_mma(fd, fa, fb, fc);
  for (int e = 0; e < 8; ++e) d.x[e] = fd[e];
}

}  // namespace nvcuda::wmma
