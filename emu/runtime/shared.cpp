// CUDA emulator: shared memory of the running block. Each worker owns an arena; the dynamic part
// (the launch's size) starts it, and each __shared__ declaration gets its place on first use in the
// block, after a 256-byte redzone, so that an access between variables is out of bounds. Static
// shared memory is limited to 48 KiB and the whole to the opt-in limit, as on the GPU.
// Covered by tests/emu/checker_test.cpp.
#include <algorithm>

#include "devices.h"
#include "state.h"

namespace moe_emu {

void* shared_variable_raw(SharedKey* key, size_t bytes, size_t align, const char* name) {
  ThreadState& t = current_thread();
  Worker& w = *t.worker;
  for (const SharedRegion& r : w.regions)
    if (r.key == key) return w.arena + r.begin;
  align = std::max<size_t>(align, 16);
  const size_t begin = (w.static_top + align - 1) / align * align, end = begin + bytes;
  w.static_bytes += bytes;
  if (w.static_bytes > kStaticSharedLimit || w.static_bytes + w.dynamic_bytes > kMaxSharedPerBlock ||
      end + 256 > w.arena_bytes)
    report(t, ReportKind::shared_memory_limit, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
           "__shared__ " + std::string(name) + " brings the block to " + std::to_string(w.static_bytes) +
               " bytes of static shared memory (limit " + std::to_string(kStaticSharedLimit) + ") and " +
               std::to_string(w.static_bytes + w.dynamic_bytes) + " in all (limit " +
               std::to_string(kMaxSharedPerBlock) + ")",
           true);
  w.regions.push_back(SharedRegion{begin, end, key, name});
  w.static_top = end + 256;
  return w.arena + begin;
}

void* dynamic_shared_raw(size_t align) {
  ThreadState& t = current_thread();
  if (align > 4096)
    report(t, ReportKind::shared_memory_limit, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
           "extern __shared__ alignment " + std::to_string(align) + " is above what the emulator provides (4096)", true);
  return t.worker->arena;
}

bool in_arena(const Worker& w, uintptr_t addr) {
  return addr - reinterpret_cast<uintptr_t>(w.arena) < w.arena_bytes;
}

const SharedRegion* shared_region(const Worker& w, uintptr_t addr, size_t bytes) {
  const size_t off = addr - reinterpret_cast<uintptr_t>(w.arena);
  for (const SharedRegion& r : w.regions)
    if (off >= r.begin && off + bytes <= r.end) return &r;
  return nullptr;
}

}  // namespace moe_emu
