// CUDA emulator: the allocation table (memory.h). One ordered map of allocations (begin -> record)
// under a mutex; blocks that a caching allocator sub-divides carry their live ranges. Lookups come
// from the checker on a cache miss only (workers cache the last range found).
// Covered by tests/emu/checker_test.cpp.
#include "memory.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "moe_emu/control.h"

namespace moe_emu {
namespace {
constexpr size_t kRedzone = 256;

struct Allocation {
  uintptr_t end;
  int device;
  bool suballocated = false;
  std::map<uintptr_t, uintptr_t> live;  // begin -> end of the live tensors inside
};

std::mutex g_mutex;
std::map<uintptr_t, Allocation> g_allocations;
std::vector<size_t> g_used(64, 0);
std::atomic<uint64_t> g_generation{1};

size_t total_bytes() {
  static const size_t total = [] {
    const char* gb = std::getenv("MOE_EMU_MEMORY_GB");
    return size_t(gb ? std::atof(gb) : 16.0) << 30;
  }();
  return total;
}

void* allocate(size_t bytes, int device) {
  const size_t padded = (bytes + 2 * kRedzone + 255) / 256 * 256;
  auto* raw = static_cast<unsigned char*>(std::aligned_alloc(256, padded));
  if (!raw) return nullptr;
  std::memset(raw, 0xff, padded);  // garbage, as fresh GPU memory may be: NaN in every float type
  const auto begin = reinterpret_cast<uintptr_t>(raw + kRedzone);
  g_allocations[begin] = Allocation{begin + bytes, device, false, {}};
  return raw + kRedzone;
}

bool release(void* ptr, bool pinned) {
  auto it = g_allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g_allocations.end() || (it->second.device == kHostDevice) != pinned) return false;
  if (!pinned) g_used[static_cast<size_t>(it->second.device)] -= it->second.end - it->first;
  g_allocations.erase(it);
  ++g_generation;
  std::free(static_cast<unsigned char*>(ptr) - kRedzone);
  return true;
}

std::string bytes_text(uintptr_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }
std::string size_text(uintptr_t n) { return std::to_string(n) + "-byte"; }
}  // namespace

void* device_allocate(size_t bytes, int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_used[static_cast<size_t>(device)] + bytes > total_bytes()) return nullptr;
  void* p = allocate(bytes, device);
  if (p) g_used[static_cast<size_t>(device)] += bytes;
  return p;
}

bool device_free(void* ptr) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return release(ptr, false);
}

void* pinned_allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return allocate(bytes, kHostDevice);
}

bool pinned_free(void* ptr) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return release(ptr, true);
}

size_t device_memory_used(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_used[static_cast<size_t>(device)];
}

size_t device_memory_total() { return total_bytes(); }

uint64_t memory_generation() { return g_generation.load(std::memory_order_acquire); }

void note_suballocation(void* ptr, size_t bytes, bool live) {
  const auto begin = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_allocations.upper_bound(begin);
  if (it == g_allocations.begin()) return;
  --it;
  Allocation& a = it->second;
  if (begin + bytes > a.end) return;  // not inside one allocation: nothing to track
  a.suballocated = true;
  if (live) {
    a.live[begin] = begin + bytes;
    std::memset(ptr, 0xff, bytes);
  } else {
    a.live.erase(begin);
    ++g_generation;
  }
}

Located locate(uintptr_t addr, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Located r;
  auto it = g_allocations.upper_bound(addr);
  if (it == g_allocations.begin()) {
    r.problem = "not in any device allocation";
    return r;
  }
  --it;
  const uintptr_t begin = it->first;
  const Allocation& a = it->second;
  r.device = a.device;
  if (addr >= a.end + kRedzone) {
    r.problem = "not in any device allocation";
    return r;
  }
  if (addr + bytes > a.end) {
    r.problem = bytes_text(addr + bytes - a.end) + " past the end of a " + size_text(a.end - begin) + " allocation";
    return r;
  }
  if (!a.suballocated) {
    r.ok = true, r.begin = begin, r.end = a.end;
    return r;
  }
  auto t = a.live.upper_bound(addr);
  if (t != a.live.begin()) {
    --t;
    if (addr >= t->first && addr + bytes <= t->second) {
      r.ok = true, r.begin = t->first, r.end = t->second;
      return r;
    }
    if (addr >= t->first && addr < t->second + 256) {
      r.problem = bytes_text(addr + bytes - t->second) + " past the end of a " + size_text(t->second - t->first) + " tensor";
      return r;
    }
  }
  r.problem = "in cached device memory that holds no live tensor (out of bounds, or used after it was freed)";
  return r;
}

}  // namespace moe_emu
