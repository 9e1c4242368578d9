// Launchers of the kernels of tests/emu/blind_spot_kernels.cu: bugs that only a GPU used to show (and
// their correct twins). Each queues its work on `stream` (nullptr: the legacy default stream) and
// returns the launch's immediate error as an int; the caller synchronises. Pointers are device memory.
#pragma once

using cudaStream_t = struct CUstream_st*;

namespace moe::emu_test {

void block_race(int* out, bool own_element, cudaStream_t stream = nullptr);  // 8 blocks; each reads its right neighbour's element, or its own
void block_atomics(int* out);                                 // 8 blocks atomicAdd one counter: no race
void read_into(const int* in, int* out, int n, cudaStream_t stream = nullptr);  // out[i] = in[i] + 1
void write_iota(int* out, int n, cudaStream_t stream = nullptr);                // out[i] = i
void last_block(int* out, bool max);   // 64 blocks: atomicExch (last wins) or atomicMax of the block index
void last_thread(int* out, bool max);  // one block of 256: the same over threads, through shared memory
void launch_twin();                    // launches launched_twin_kernel (the source-count test's twin)

}  // namespace moe::emu_test
