// The hand-vectorised f32 rows of CPU attention (ops/attention_cpu.cpp), for AVX-512F and AVX2 (ops/cpu_isa.h); the
// portable loops stay in attention_cpu.cpp. Keys are addressed by offsets (key j at k + off[j], D floats), as a
// decoding cache's row table gives them:
//   dots:         out[j] = q . k_j, each summed over 16 (AVX-512) or 8 (AVX2) lanes with fused multiply-adds and then
//                 across the lanes, in the same order whichever block of keys it falls in (so a row's scores do not
//                 depend on how many keys follow);
//   weighted_sum: o = sum_c p[c] v_kept[c] (or o += the same), four partial sums per element (key c into sum c mod
//                 4, o's old value starting the first), (s0 + s1) + (s2 + s3): the same bits on both sets;
//   key_update:   dk_j += ds q_i, dv_j += c dout_i (a null destination skipped).
// Covered by tests/ops/attention_test.cpp ("every instruction set's rows equal the portable ones", "padding keys
// leave a row's bits as they are").
#pragma once
#include <cstdint>

#include "ops/cpu_isa.h"

namespace moe::cpu {

/// out[j] = q . k_j for the n keys k_j = k + off[j]; `isa` avx2 or avx512.
void dots(CpuIsa isa, const float* q, const float* k, const int64_t* off, int64_t n, int64_t D, float* out);
/// o = sum_c p[c] v_kept[c] over the n kept keys (key j at v + off[j]), or o += the same when `add`.
void weighted_sum(CpuIsa isa, const float* p, const int64_t* kept, int64_t n, const float* v, const int64_t* off,
                  int64_t D, float* o, bool add = false);
/// The backward's update of one key by one query: dk_j += ds q_i, dv_j += c dout_i (a null destination is skipped).
void key_update(CpuIsa isa, float ds, float c, const float* qi, const float* dout_i, float* dk, float* dv, int64_t D);

}  // namespace moe::cpu
