// CUDA emulator: the allocation table (memory.h). One ordered map of allocations (begin -> record)
// under a mutex; blocks that a caching allocator sub-divides carry their live ranges. Lookups come
// from the checker on a cache miss only (workers cache the last range found). Fresh memory (a new
// allocation, a tensor handed out) is forgotten by the device-memory shadow: nothing written yet. Each device
// has MOE_EMU_DEVICE_MEMORY bytes (default 16GiB): cudaMalloc fails beyond it, as on a GPU that is full.
// Covered by tests/emu/checker_test.cpp and (the memory size) tests/scripts/gpu_memory.sh.
#include "memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "global_shadow.h"
#include "moe_emu/control.h"
#include "queue.h"

namespace moe_emu {
namespace {
constexpr size_t kRedzone = 256;

struct Allocation {
  uintptr_t end;
  int device;
  size_t mapped = 0;  // pinned memory: the bytes of its own pages (mmap)
  bool suballocated = false;
  std::map<uintptr_t, uintptr_t> live;  // begin -> end of the live tensors inside
};

std::mutex g_mutex;
std::map<uintptr_t, Allocation> g_allocations;
std::vector<size_t> g_used(64, 0);
std::atomic<uint64_t> g_generation{1};

/// "256MiB", "1.5GiB", "4096" (bytes): B, KiB/K, MiB/M, GiB/G, TiB/T (powers of 1024); 0 when malformed.
size_t parse_size(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return 0;
  }
  std::string unit = text.substr(used);
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();  // "MiB" / "MB" -> "Mi" / "M"
  if (unit.size() == 2 && unit[1] == 'i') unit.pop_back();
  const char* units = "BKMGT";
  const char* u = unit.empty() ? units : unit.size() == 1 ? std::strchr(units, unit[0]) : nullptr;
  if (!u || v <= 0) return 0;
  return static_cast<size_t>(v * static_cast<double>(size_t(1) << (10 * (u - units))));
}

size_t total_bytes() {
  static const size_t total = [] {
    const char* v = std::getenv("MOE_EMU_DEVICE_MEMORY");
    if (!v) return size_t(16) << 30;
    const size_t n = parse_size(v);
    if (n == 0) {
      std::fprintf(stderr, "moe-emu: MOE_EMU_DEVICE_MEMORY='%s' is not a size such as 256MiB, 1.5GiB or 4096\n", v);
      std::exit(2);
    }
    return n;
  }();
  return total;
}

void* allocate(size_t bytes, int device) {
  const size_t padded = (bytes + 2 * kRedzone + 255) / 256 * 256;
  auto* raw = static_cast<unsigned char*>(std::aligned_alloc(256, padded));
  if (!raw) return nullptr;
  std::memset(raw, 0xff, padded);  // garbage, as fresh GPU memory may be: NaN in every float type
  const auto begin = reinterpret_cast<uintptr_t>(raw + kRedzone);
  shadow_forget(begin, bytes);
  g_allocations[begin] = Allocation{begin + bytes, device, 0, false, {}};
  return raw + kRedzone;
}

/// Pinned host memory: pages of its own, so that host_guard.h can protect them.
void* allocate_pinned(size_t bytes) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE)), mapped = (bytes + page - 1) / page * page + page;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  std::memset(raw, 0xff, bytes);
  const auto begin = reinterpret_cast<uintptr_t>(raw);
  g_allocations[begin] = Allocation{begin + bytes, kHostDevice, mapped, false, {}};
  return raw;
}

bool release(void* ptr, bool pinned) {
  auto it = g_allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g_allocations.end() || (it->second.device == kHostDevice) != pinned) return false;
  const size_t mapped = it->second.mapped;
  if (!pinned) g_used[static_cast<size_t>(it->second.device)] -= it->second.end - it->first;
  if (!pinned) shadow_forget(it->first, it->second.end - it->first);
  g_allocations.erase(it);
  ++g_generation;
  if (pinned) munmap(ptr, mapped);
  else std::free(static_cast<unsigned char*>(ptr) - kRedzone);
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
  return allocate_pinned(bytes);
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

namespace {
void apply_suballocation(uintptr_t begin, size_t bytes, bool live) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_allocations.upper_bound(begin);
  if (it == g_allocations.begin()) return;
  --it;
  Allocation& a = it->second;
  if (begin + bytes > a.end) return;  // not inside one allocation: nothing to track
  a.suballocated = true;
  if (live) {
    a.live[begin] = begin + bytes;
    std::memset(reinterpret_cast<void*>(begin), 0xff, bytes);
    shadow_forget(begin, bytes);
  } else {
    a.live.erase(begin);
    ++g_generation;
  }
}
}  // namespace

void note_suballocation(void* ptr, size_t bytes, bool live) {
  // Queued: work queued before it still sees the old tensors, work queued after it the new one.
  const auto begin = reinterpret_cast<uintptr_t>(ptr);
  enqueue(kNoStream, OpKind::bookkeeping, live ? "a tensor handed out" : "a tensor given back", [=](const Op&) {
    apply_suballocation(begin, bytes, live);
    return cudaSuccess;
  });
}

Located locate(uintptr_t addr, size_t bytes, bool live_tensors) {
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
  if (!a.suballocated || !live_tensors) {
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
