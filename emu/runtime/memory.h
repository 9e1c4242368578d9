// CUDA emulator (emu/README.md): the allocation table. Device memory is host memory with a 256-byte
// redzone on each side, recorded with its device; pinned host memory (pages of its own, which
// host_guard.h may protect) is recorded too. Inside a block that moe's caching allocator sub-divides,
// only the ranges of live tensors count; the caching allocator's notes about them are queued
// operations (queue.h), so queued kernels see the tensors that were live when they were launched.
// Kernels' global accesses and the device pointers given to copies, cuBLAS and cub are checked against it.
// Covered by tests/emu/checker_test.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace moe_emu {

constexpr int kHostDevice = -1;  // pinned host memory: every device may access it

void* device_allocate(size_t bytes, int device);  // nullptr when the device's memory is exhausted
bool device_free(void* ptr);                       // false: not the start of a device allocation
void* pinned_allocate(size_t bytes);
bool pinned_free(void* ptr);
size_t device_memory_used(int device);
size_t device_memory_total();

struct Located {
  bool ok = false;
  int device = kHostDevice;
  uintptr_t begin = 0, end = 0;  // the range found (a live tensor or an allocation): cacheable
  std::string problem;           // when !ok: what is wrong ("12 bytes past the end of a 400-byte tensor")
};
/// Where [addr, addr + bytes) lies; with live_tensors false, inside which allocation only (a block of
/// the caching allocator counts whole, as CUDA sees it).
Located locate(uintptr_t addr, size_t bytes, bool live_tensors = true);
/// Changes whenever a range stops being valid (a free): cached Located ranges must be looked up again.
uint64_t memory_generation();

}  // namespace moe_emu
