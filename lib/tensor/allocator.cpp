// allocator.h implementation (CPU blocks above 64 KiB: host_arena.cpp; the limits named in errors: host_limits.h).
#include "tensor/allocator.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "common/error.h"
#include "tensor/cuda_runtime.h"
#include "tensor/host_limits.h"
#include "tensor/out_of_memory.h"

#if defined(__SANITIZE_ADDRESS__)
#define MOE_ALLOCATOR_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MOE_ALLOCATOR_SANITIZED 1
#endif
#endif

namespace moe {

namespace {
constexpr size_t kClassesFrom = size_t(64) << 10;  // CPU blocks above this: classes or the arena
}

bool Allocator::host_arena_enabled() {
#ifdef MOE_ALLOCATOR_SANITIZED
  return false;
#else
  return true;
#endif
}

size_t Allocator::round_size(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t(2) << 20, kSmallLimit = size_t(1) << 20;
  if (bytes == 0) return kSmall;
  if (bytes <= kSmallLimit) return (bytes + kSmall - 1) / kSmall * kSmall;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

size_t Allocator::round_size_host(size_t bytes) {
  constexpr size_t kPage = 4096;
  if (bytes <= kClassesFrom) return round_size(bytes);
  size_t base = kClassesFrom;  // the power of two at or below bytes
  while (base * 2 <= bytes) base *= 2;
  const size_t step = base / 4;
  const size_t size = (bytes + step - 1) / step * step;  // base * {1, 1.25, 1.5, 1.75, 2}
  return (size + kPage - 1) / kPage * kPage;
}

Allocator::~Allocator() {
  // Process exit: the CUDA context may already be gone, so only host memory is given back here.
  if (device_.is_cpu()) {
    for (auto& [ptr, size] : block_sizes_)
      if (!arena_ || !arena_->owns(ptr)) std::free(ptr);  // the arena unmaps its own
  }
}

bool Allocator::in_arena(size_t size) const {
  return device_.is_cpu() && host_arena_enabled() && !arena_fallback_ && size > kClassesFrom;
}

void* Allocator::raw_alloc(size_t bytes) {
  if (in_arena(bytes)) {  // the cap applies to everything reserved: what the arena may add is the rest
    if (!arena_) arena_ = std::make_unique<HostArena>();
    if (limit_ && stats_.reserved >= limit_) return nullptr;
    void* p = arena_->allocate(bytes, limit_ ? limit_ - stats_.reserved : 0);
    if (p || !arena_->reservation_failed()) return p;
    arena_fallback_ = true;  // from now on, large blocks as in sanitizer builds: one system allocation each
    spdlog::warn(
        "CPU allocator: cannot reserve address space for the host arena ({} in {} range(s) so far; {}): "
        "large blocks now come from malloc",
        format_bytes(arena_->address_space()), arena_->ranges(), HostLimits::current().describe());
  }
  if (limit_ && reserved_locked() + bytes > limit_) return nullptr;
  // (CPU sizes are multiples of 512, as aligned_alloc needs; large blocks are in the arena except in
  // sanitizer builds and after a fallback)
  void* p = device_.is_cpu() ? std::aligned_alloc(256, bytes) : cuda::raw_malloc(bytes, device_.index);
  if (p) {
    stats_.reserved += bytes;
    ++stats_.raw_allocations;
  }
  return p;
}

void Allocator::raw_free(void* ptr) {
  if (device_.is_cpu()) std::free(ptr);
  else cuda::raw_free(ptr, device_.index);
}

size_t Allocator::reserved_locked() const { return stats_.reserved + (arena_ ? arena_->reserved() : 0); }

size_t Allocator::rounded(Device device, size_t bytes) {
  if (device.is_cpu() && host_arena_enabled() && bytes > kClassesFrom)  // in_arena
    return (bytes + HostArena::kPage - 1) / HostArena::kPage * HostArena::kPage;
  return device.is_cpu() ? round_size_host(bytes) : round_size(bytes);
}

size_t Allocator::block_size(size_t bytes) const {
  // After an arena fallback, large CPU blocks are system allocations again: size classes, not pages.
  return arena_fallback_ ? round_size_host(bytes) : rounded(device_, bytes);
}

void* Allocator::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t size = block_size(bytes);
  void* p = nullptr;
  auto it = in_arena(size) ? free_blocks_.end() : free_blocks_.lower_bound(size);  // the arena is its own cache
  if (it != free_blocks_.end() && it->first <= 2 * size) {
    p = it->second;
    free_blocks_.erase(it);
  } else {
    p = raw_alloc(size);
    if (!p) {
      release_cache_locked();
      p = raw_alloc(size);
    }
    if (!p) {
      AllocatorStats now = stats_;
      now.reserved = reserved_locked();
      throw OutOfMemory(out_of_memory_text(device_, "a request for " + format_bytes(bytes), now));
    }
    block_sizes_[p] = size;
  }
  const size_t actual = block_sizes_[p];
  if (device_.is_cuda()) cuda::note_tensor_memory(p, bytes, true);
  stats_.in_use += actual;
  if (stats_.in_use > stats_.peak_in_use) stats_.peak_in_use = stats_.in_use;
  return p;
}

void Allocator::deallocate(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = block_sizes_.find(ptr);
  MOE_CHECK(it != block_sizes_.end(), "allocator on ", device_.str(), ": freeing a pointer it did not allocate");
  if (holding_) {  // a recorded graph still writes it (hold_frees)
    held_.push_back(ptr);
    return;
  }
  stats_.in_use -= it->second;
  if (device_.is_cuda()) cuda::note_tensor_memory(ptr, 0, false);
  if (arena_ && arena_->owns(ptr)) {
    arena_->deallocate(ptr, it->second);
    block_sizes_.erase(it);
  } else {
    free_blocks_.emplace(it->second, ptr);
  }
}

void Allocator::hold_frees(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  holding_ = on;
}

std::vector<void*> Allocator::take_held() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(held_);
}

void Allocator::return_blocks(const std::vector<void*>& blocks) {
  for (void* p : blocks) deallocate(p);
}

void Allocator::release_cache_locked() {
  for (auto& [size, ptr] : free_blocks_) {
    raw_free(ptr);
    block_sizes_.erase(ptr);
    stats_.reserved -= size;
  }
  free_blocks_.clear();
  if (arena_) arena_->release_free();
}

void Allocator::release_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cache_locked();
}

AllocatorStats Allocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  AllocatorStats s = stats_;
  s.reserved = reserved_locked();
  if (arena_) s.raw_allocations += arena_->growths();
  return s;
}

void Allocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_in_use = stats_.in_use;
}

std::string out_of_memory_text(Device device, const std::string& request, const AllocatorStats& stats) {
  return "out of memory on " + device.str() + ": " + request + " failed with " + format_bytes(stats.in_use) +
         " in use by tensors and " + format_bytes(stats.reserved) + " reserved (peak " +
         format_bytes(stats.peak_in_use) +
         (device.is_cpu() ? "; " + HostLimits::current().describe()
                          : "; " + format_bytes(cuda::free_memory(device.index)) + " free on the device") +
         ")";
}

void throw_out_of_memory(Device device, const std::string& request) {
  throw OutOfMemory(out_of_memory_text(device, request, allocator_for(device).stats()));
}

Allocator& allocator_for(Device device) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<Allocator>> cpu_and_gpus;  // [0] = cpu, [1 + i] = cuda:i
  std::lock_guard<std::mutex> lock(mutex);
  const size_t slot = device.is_cpu() ? 0 : 1 + static_cast<size_t>(device.index);
  if (device.is_cuda())
    MOE_CHECK(device.index >= 0 && device.index < gpu_count(), "device ", device, " is not available (",
              gpu_count(), " GPU(s) found", built_with_cuda() ? "" : "; this build has no CUDA support", ")");
  if (cpu_and_gpus.size() <= slot) cpu_and_gpus.resize(slot + 1);
  if (!cpu_and_gpus[slot]) cpu_and_gpus[slot] = std::make_unique<Allocator>(device);
  return *cpu_and_gpus[slot];
}

std::string format_bytes(size_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1ull << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024);
  else std::snprintf(buf, sizeof buf, "%zu B", bytes);
  return buf;
}

}  // namespace moe
