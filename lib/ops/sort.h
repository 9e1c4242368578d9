// Stable counting sort of positions by an integer key (tokens by expert for the grouped GEMM):
//   keys i32 [N] in [0, S) -> perm i32 [N] (perm[j] = the position that lands at j; equal keys keep
//   their order) and offsets i32 [S+1] (offsets[s] = number of keys < s; segment s is
//   perm[offsets[s] .. offsets[s+1])). A key outside [0, S) is flagged, not fatal: such positions
//   go after every segment (in order), so offsets[S] < N exactly when some key was out of range.
// inverse_permutation: inv[perm[j]] = j. No host synchronisation on the GPU.
// CPU reference in lib/ops/sort.cpp, CUDA in cuda/ops/sort.cu. Covered by tests/ops/sort_test.cpp
// and tests/gpu/sort_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void sort_by_key(const Tensor& keys, int num_segments, Tensor& perm, Tensor& offsets);
void inverse_permutation(const Tensor& perm, Tensor& inv);
}  // namespace cpu
namespace cuda {
void sort_by_key(const Tensor& keys, int num_segments, Tensor& perm, Tensor& offsets);
void inverse_permutation(const Tensor& perm, Tensor& inv);
}  // namespace cuda

/// keys i32 [N], perm i32 [N], offsets i32 [num_segments + 1], all on one device; see above.
void sort_by_key(const Tensor& keys, int num_segments, Tensor& perm, Tensor& offsets);
/// perm i32 [N] (a permutation of 0..N-1) -> inv i32 [N] with inv[perm[j]] = j.
void inverse_permutation(const Tensor& perm, Tensor& inv);

}  // namespace moe
