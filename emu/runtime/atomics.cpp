// CUDA emulator: device atomics and cp.async (runtime.h). Atomics are real atomic operations on the
// host (blocks of a launch run concurrently on the workers), checked like any access first (bounds,
// alignment, device, initialised shared memory). cp.async copies are queued per thread, grouped by
// __pipeline_commit and land only at __pipeline_wait_prior (or when the thread ends); until then the
// destination bytes are marked in flight for the checker. Covered by tests/emu/checker_test.cpp and the
// grouped-GEMM parity tests.
#include <atomic>
#include <cstring>

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "state.h"

namespace moe_emu {
namespace {
template <class T, class F>
T read_modify_write(T* p, uintptr_t pc, F f) {
  check_access(current_thread(), reinterpret_cast<uintptr_t>(p), sizeof(T), true, pc, true, true);
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (!a.compare_exchange_weak(old, f(old))) {
  }
  return old;
}
#define MOE_EMU_PC reinterpret_cast<uintptr_t>(__builtin_return_address(0))

void land(ThreadState& t, const AsyncCopy& c) {
  auto* dst = reinterpret_cast<uint8_t*>(c.dst);
  uint8_t old[16];
  std::memcpy(old, dst, c.bytes);
  std::memcpy(dst, reinterpret_cast<const void*>(c.src), c.bytes - c.zero_fill);
  std::memset(dst + c.bytes - c.zero_fill, 0, c.zero_fill);
  record_shared_write(t, c.dst, old, c.bytes, c.pc);
}
}  // namespace

float atomic_add(float* p, float v) { return read_modify_write(p, MOE_EMU_PC, [v](float o) { return o + v; }); }
double atomic_add(double* p, double v) { return read_modify_write(p, MOE_EMU_PC, [v](double o) { return o + v; }); }
int atomic_add(int* p, int v) {
  return read_modify_write(p, MOE_EMU_PC, [v](int o) { return int(unsigned(o) + unsigned(v)); });
}
unsigned atomic_add(unsigned* p, unsigned v) { return read_modify_write(p, MOE_EMU_PC, [v](unsigned o) { return o + v; }); }
unsigned long long atomic_add(unsigned long long* p, unsigned long long v) {
  return read_modify_write(p, MOE_EMU_PC, [v](unsigned long long o) { return o + v; });
}
uint16_t atomic_add_half(uint16_t* p, float v) {
  return read_modify_write(p, MOE_EMU_PC, [v](uint16_t o) { return float_to_half_bits(half_bits_to_float(o) + v); });
}
uint16_t atomic_add_bfloat16(uint16_t* p, float v) {
  return read_modify_write(p, MOE_EMU_PC, [v](uint16_t o) { return float_to_bf16_bits(bf16_bits_to_float(o) + v); });
}
int atomic_cas(int* p, int e, int d) { return read_modify_write(p, MOE_EMU_PC, [e, d](int o) { return o == e ? d : o; }); }
unsigned atomic_cas(unsigned* p, unsigned e, unsigned d) {
  return read_modify_write(p, MOE_EMU_PC, [e, d](unsigned o) { return o == e ? d : o; });
}
unsigned long long atomic_cas(unsigned long long* p, unsigned long long e, unsigned long long d) {
  return read_modify_write(p, MOE_EMU_PC, [e, d](unsigned long long o) { return o == e ? d : o; });
}
int atomic_max(int* p, int v) { return read_modify_write(p, MOE_EMU_PC, [v](int o) { return o > v ? o : v; }); }
int atomic_min(int* p, int v) { return read_modify_write(p, MOE_EMU_PC, [v](int o) { return o < v ? o : v; }); }
unsigned atomic_max(unsigned* p, unsigned v) { return read_modify_write(p, MOE_EMU_PC, [v](unsigned o) { return o > v ? o : v; }); }
int atomic_exch(int* p, int v) { return read_modify_write(p, MOE_EMU_PC, [v](int) { return v; }); }
unsigned atomic_exch(unsigned* p, unsigned v) { return read_modify_write(p, MOE_EMU_PC, [v](unsigned) { return v; }); }
float atomic_exch(float* p, float v) { return read_modify_write(p, MOE_EMU_PC, [v](float) { return v; }); }

void pipeline_memcpy_async(void* dst, const void* src, size_t bytes, size_t zero_fill) {
  queue_async_copy(current_thread(), dst, src, bytes, zero_fill, MOE_EMU_PC);
}

void queue_async_copy(ThreadState& t, void* dst, const void* src, size_t bytes, size_t zero_fill, uintptr_t pc) {
  Worker& w = *t.worker;
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if ((bytes != 4 && bytes != 8 && bytes != 16) || zero_fill > bytes)
    report(t, ReportKind::async_in_flight, pc,
           "cp.async of " + std::to_string(bytes) + " bytes with zero fill " + std::to_string(zero_fill) +
               ": the size must be 4, 8 or 16 and the fill at most the size",
           true);
  if (!in_arena(w, d) || !shared_region(w, d, bytes))
    report(t, ReportKind::out_of_bounds, pc,
           "cp.async destination is not inside a __shared__ variable or the dynamic shared memory", true, d);
  if (d % bytes)
    report(t, ReportKind::misaligned, pc, "cp.async destination is not " + std::to_string(bytes) + "-byte aligned",
           true, d);
  if (bytes > zero_fill) {
    if (s % bytes)
      report(t, ReportKind::misaligned, pc, "cp.async source is not " + std::to_string(bytes) + "-byte aligned", true,
             s);
    check_access(t, s, bytes - zero_fill, false, pc, false, false);
  }
  const size_t off = d - reinterpret_cast<uintptr_t>(w.arena);
  for (size_t i = 0; i < bytes; ++i) w.shadow[off + i].async_pending = 1;
  t.async_open.push_back(AsyncCopy{d, s, uint32_t(bytes), uint32_t(zero_fill), pc});
}

void pipeline_commit() {
  ThreadState& t = current_thread();
  t.async_groups.push_back(std::move(t.async_open));
  t.async_open.clear();
}

void pipeline_wait_prior(unsigned groups) {
  ThreadState& t = current_thread();
  flush_pending_writes(t);
  while (t.async_groups.size() > groups) {
    for (const AsyncCopy& c : t.async_groups.front()) land(t, c);
    t.async_groups.erase(t.async_groups.begin());
  }
}

void pipeline_finish(ThreadState& t) {
  if (!t.async_open.empty()) t.async_groups.push_back(std::move(t.async_open));
  t.async_open.clear();
  for (const auto& g : t.async_groups)
    for (const AsyncCopy& c : g) land(t, c);
  t.async_groups.clear();
}

}  // namespace moe_emu
