// CUDA emulator (emu/README.md): the Tensor Memory Accelerator. cuTensorMapEncodeTiled (the driver API)
// checks its arguments as the driver documents them and writes the emulator's own encoding into the
// 128-byte CUtensorMap (async_state.h's TensorMapData). A tensor load (cp.async.bulk.tensor, 1 to 5
// dimensions) copies the box at the given element coordinates into shared memory, dimension 0
// innermost and densely packed, each byte at its swizzled place (smem_layout.h); elements outside the
// tensor read as zero (or NaN with CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) and the whole box
// counts as transaction bytes of the mbarrier it completes on (it lands when a thread waits there:
// mbarrier.cpp). A tensor store or reduce-add (cp{.reduce}.async.bulk.tensor ... .add) reads the box
// from shared memory (fenced, checked at issue) and writes or adds the in-bounds elements to global
// memory when its bulk group is waited for (cp.async.bulk.wait_group{.read}) or the thread ends; a
// write of that shared memory by the thread before its wait is reported (bulk_reads). Reduce-add takes f32, f16 and
// bf16 elements. Not emulated (refused when encoding): interleaved layouts, element strides other than 1, the 128B_ATOM
// swizzles, packed 4- and 6-bit types. Covered by tests/gpu/ptx_instructions_parity_test.cpp and
// tests/emu/async_checker_test.cpp.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "async_ops.h"
#include "cuda.h"
#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "mbarrier.h"
#include "reports.h"
#include "smem_layout.h"

namespace moe_emu {

struct BulkStore {
  TensorMapData map;
  int32_t coords[5];
  uintptr_t src, pc;
  bool reduce_add;
  std::vector<uint8_t> image;  // the shared-memory box at issue
};

namespace {
#define MOE_EMU_PC reinterpret_cast<uintptr_t>(__builtin_return_address(0))

uint32_t box_bytes(const TensorMapData& m) {
  uint32_t n = m.element_bytes;
  for (int d = 0; d < m.rank; ++d) n *= m.box[d];
  return n;
}

TensorMapData read_map(ThreadState& t, const void* map, int rank, uintptr_t pc, const char* op) {
  check_access(t, reinterpret_cast<uintptr_t>(map), sizeof(TensorMapData), false, pc, false, false);
  TensorMapData m;
  std::memcpy(&m, map, sizeof(m));
  if (m.magic != kTensorMapMagic)
    report(t, ReportKind::async_misuse, pc,
           std::string(op) + " with a tensor map that cuTensorMapEncodeTiled did not write", true);
  if (rank != m.rank)
    report(t, ReportKind::async_misuse, pc,
           std::string(op) + " with " + std::to_string(rank) + " coordinates for a tensor map of rank " +
               std::to_string(m.rank),
           true);
  return m;
}

void check_box_place(ThreadState& t, const TensorMapData& m, uintptr_t smem, uintptr_t pc, const char* op) {
  const uint32_t bytes = box_bytes(m);
  if (!in_arena(*t.worker, smem) || !shared_region(*t.worker, smem, bytes))
    report(t, ReportKind::out_of_bounds, pc,
           std::string(op) + ": the " + std::to_string(bytes) +
               "-byte box does not fit in a shared-memory variable at its address",
           true, smem);
  if ((smem - reinterpret_cast<uintptr_t>(t.worker->arena)) % 128)
    report(t, ReportKind::misaligned, pc, std::string(op) + ": shared memory of a tensor copy must be 128-byte aligned",
           true, smem);
  if (m.swizzle_bytes && bytes % m.swizzle_bytes)
    report(t, ReportKind::async_misuse, pc,
           std::string(op) + ": a swizzled box must fill whole " + std::to_string(m.swizzle_bytes) + "-byte rows",
           true);
}

/// Calls f(smem offset in the box (swizzle not applied), global address or 0 when out of bounds, run
/// elements) for every run of dimension 0 of the box, split where the tensor's bounds cut it.
template <class F>
void for_each_run(const TensorMapData& m, const int32_t* coords, F f) {
  uint32_t idx[5] = {0, 0, 0, 0, 0};
  const uint32_t rows = box_bytes(m) / m.element_bytes / m.box[0];
  for (uint32_t row = 0; row < rows; ++row) {
    uint32_t rest = row;
    bool inside = true;
    uint64_t addr = m.address;
    for (int d = 1; d < m.rank; ++d) {
      idx[d] = rest % m.box[d], rest /= m.box[d];
      const int64_t g = int64_t(coords[d]) + idx[d];
      inside &= g >= 0 && uint64_t(g) < m.dim[d];
      addr += uint64_t(g) * m.stride[d];
    }
    const size_t base = size_t(row) * m.box[0] * m.element_bytes;
    int64_t lo = -int64_t(coords[0]), hi = int64_t(m.dim[0]) - coords[0];  // box indices inside along dim 0
    lo = std::max<int64_t>(lo, 0), hi = std::min<int64_t>(hi, m.box[0]);
    if (!inside || lo >= hi) {
      f(base, uint64_t(0), uint32_t(m.box[0]));
      continue;
    }
    if (lo > 0) f(base, uint64_t(0), uint32_t(lo));
    f(base + size_t(lo) * m.element_bytes, addr + uint64_t(coords[0] + lo) * m.element_bytes, uint32_t(hi - lo));
    if (hi < m.box[0]) f(base + size_t(hi) * m.element_bytes, uint64_t(0), uint32_t(m.box[0] - hi));
  }
}

void fill_value(const TensorMapData& m, uint8_t* out) {
  std::memset(out, 0, m.element_bytes);
  if (!m.nan_fill) return;
  if (m.element_bytes == 2) std::memcpy(out, "\xff\x7f", 2);
  if (m.element_bytes == 4) std::memcpy(out, "\xff\xff\xff\x7f", 4);
  if (m.element_bytes == 8) std::memcpy(out, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
}

void add_element(const TensorMapData& m, uint8_t* dst, const uint8_t* src) {
  if (m.dtype == 7) {  // CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    float v;
    std::memcpy(&v, src, 4);
    std::atomic_ref<float>(*reinterpret_cast<float*>(dst)).fetch_add(v);
    return;
  }
  uint16_t v;
  std::memcpy(&v, src, 2);
  std::atomic_ref<uint16_t> a(*reinterpret_cast<uint16_t*>(dst));
  uint16_t old = a.load();
  const bool bf16 = m.dtype == 9;
  auto sum = [&](uint16_t o) {
    return bf16 ? float_to_bf16_bits(bf16_bits_to_float(o) + bf16_bits_to_float(v))
                : float_to_half_bits(half_bits_to_float(o) + half_bits_to_float(v));
  };
  while (!a.compare_exchange_weak(old, sum(old))) {
  }
}

void complete_store(ThreadState& t, const BulkStore& s) {
  Worker& w = *t.worker;
  const TensorMapData& m = s.map;
  const size_t src_off = s.src - reinterpret_cast<uintptr_t>(w.arena);
  for_each_run(m, s.coords, [&](size_t off, uint64_t addr, uint32_t n) {
    if (!addr) return;  // out of bounds: not written
    check_access(t, uintptr_t(addr), size_t(n) * m.element_bytes, true, s.pc, s.reduce_add, false);
    for (uint32_t e = 0; e < n; ++e) {
      const size_t at = swizzle(src_off + off + size_t(e) * m.element_bytes, m.swizzle_bytes) - src_off;
      auto* dst = reinterpret_cast<uint8_t*>(addr) + size_t(e) * m.element_bytes;
      if (s.reduce_add)
        add_element(m, dst, s.image.data() + at);
      else
        std::memcpy(dst, s.image.data() + at, m.element_bytes);
    }
  });
}
void commit(ThreadState& t) {
  t.async.bulk_groups.push_back(std::move(t.async.bulk_open));
  t.async.bulk_open.clear();
}

void wait(ThreadState& t, unsigned pending) {
  while (t.async.bulk_groups.size() > pending) {
    auto group = std::move(t.async.bulk_groups.front());
    t.async.bulk_groups.erase(t.async.bulk_groups.begin());
    for (const auto& s : group) complete_store(t, *s);
  }
}
}  // namespace

void land_tma_load(Worker& w, const TmaLoad& l) {
  ThreadState& issuer = w.threads[size_t(l.tid)];
  const TensorMapData& m = l.map;
  const size_t dst_off = l.dst - reinterpret_cast<uintptr_t>(w.arena);
  uint8_t fill[8];
  fill_value(m, fill);
  for_each_run(m, l.coords, [&](size_t off, uint64_t addr, uint32_t n) {
    if (addr) check_access(issuer, uintptr_t(addr), size_t(n) * m.element_bytes, false, l.pc, false, false);
    for (uint32_t e = 0; e < n; ++e) {
      uint8_t* dst = w.arena + swizzle(dst_off + off + size_t(e) * m.element_bytes, m.swizzle_bytes);
      std::memcpy(dst, addr ? reinterpret_cast<const uint8_t*>(addr) + size_t(e) * m.element_bytes : fill,
                  m.element_bytes);
    }
  });
  land_async_write(w, l.dst, l.bytes);
}

void tma_load(void* dst_shared, const void* tensor_map, const int32_t* coords, int rank, uint64_t* bar) {
  const uintptr_t pc = MOE_EMU_PC;
  ThreadState& t = current_thread();
  Worker& w = *t.worker;
  const char* op = "cp.async.bulk.tensor (load)";
  TmaLoad l;
  l.map = read_map(t, tensor_map, rank, pc, op);
  l.dst = reinterpret_cast<uintptr_t>(dst_shared);
  check_box_place(t, l.map, l.dst, pc, op);
  MBarrier& m = use_mbarrier(t, bar, pc, op);
  flush_pending_writes(t);
  const uint32_t stamp = next_stamp(w);
  note_async_write(t, l.dst, box_bytes(l.map), pc);
  next_stamp(w);
  std::memcpy(l.coords, coords, sizeof(int32_t) * size_t(rank));
  l.tid = t.tid, l.pc = pc, l.bytes = box_bytes(l.map), l.stamp = stamp + 1;
  attach_load(w, m, l);
}

void tma_store(const void* tensor_map, const int32_t* coords, int rank, const void* src_shared, bool reduce_add) {
  const uintptr_t pc = MOE_EMU_PC;
  ThreadState& t = current_thread();
  const char* op = reduce_add ? "cp.reduce.async.bulk.tensor (add)" : "cp.async.bulk.tensor (store)";
  auto s = std::make_shared<BulkStore>();
  s->map = read_map(t, tensor_map, rank, pc, op);
  if (reduce_add && s->map.dtype != 7 && s->map.dtype != 6 && s->map.dtype != 9)
    report(t, ReportKind::async_misuse, pc, "the emulator's TMA reduce-add takes f32, f16 and bf16 tensors", true);
  s->src = reinterpret_cast<uintptr_t>(src_shared), s->pc = pc, s->reduce_add = reduce_add;
  check_box_place(t, s->map, s->src, pc, op);
  std::memcpy(s->coords, coords, sizeof(int32_t) * size_t(rank));
  check_async_read(t, s->src, box_bytes(s->map), pc, op);
  s->image.assign(static_cast<const uint8_t*>(src_shared), static_cast<const uint8_t*>(src_shared) + box_bytes(s->map));
  t.async.bulk_open.push_back(std::move(s));
}

void bulk_commit_group() { commit(current_thread()); }

void bulk_wait_group(unsigned pending, bool /*read_only: the whole store is done at either wait*/) {
  wait(current_thread(), pending);
}

uintptr_t bulk_reads(const ThreadState& t, size_t off, size_t bytes) {
  const auto arena = reinterpret_cast<uintptr_t>(t.worker->arena);
  auto covers = [&](const std::shared_ptr<BulkStore>& s) {
    const size_t begin = s->src - arena;
    return off < begin + s->image.size() && off + bytes > begin;
  };
  for (const auto& s : t.async.bulk_open)
    if (covers(s)) return s->pc;
  for (const auto& g : t.async.bulk_groups)
    for (const auto& s : g)
      if (covers(s)) return s->pc;
  return 0;
}

void finish_bulk(ThreadState& t) {
  commit(t);
  wait(t, 0);
}

}  // namespace moe_emu

namespace {
unsigned element_size(CUtensorMapDataType type) {
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
      return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
      return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      return 8;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return 4;
    default:
      return 0;
  }
}

CUresult refuse(const std::string& why) {
  moe_emu::publish_api_report(moe_emu::ReportKind::api_misuse, "cuTensorMapEncodeTiled: " + why);
  return CUDA_ERROR_INVALID_VALUE;
}
}  // namespace

CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                                const cuuint64_t* dim, const cuuint64_t* strides, const cuuint32_t* box,
                                const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                CUtensorMapSwizzle swizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill fill) {
  const unsigned bytes = element_size(type);
  if (!map || reinterpret_cast<uintptr_t>(map) % 64) return refuse("the tensor map must be 64-byte aligned");
  if (!bytes) return refuse("data type " + std::to_string(int(type)) + " is not emulated");
  if (rank < 1 || rank > 5) return refuse("rank " + std::to_string(rank) + " (1 to 5)");
  if (reinterpret_cast<uintptr_t>(address) % 16) return refuse("the global address must be 16-byte aligned");
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE) return refuse("interleaved layouts are not emulated");
  if (swizzle > CU_TENSOR_MAP_SWIZZLE_128B) return refuse("the 128B_ATOM swizzles are not emulated");
  const unsigned span = swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? 0u : 16u << unsigned(swizzle);
  moe_emu::TensorMapData m{};
  m.magic = moe_emu::kTensorMapMagic;
  m.rank = uint8_t(rank), m.element_bytes = uint8_t(bytes), m.swizzle_bytes = uint8_t(span), m.dtype = uint8_t(type);
  m.nan_fill = fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  if (m.nan_fill && type != CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && type != CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 &&
      type != CU_TENSOR_MAP_DATA_TYPE_FLOAT32 && type != CU_TENSOR_MAP_DATA_TYPE_FLOAT64)
    return refuse("the NaN fill needs a floating-point type");
  m.address = reinterpret_cast<uintptr_t>(address);
  m.stride[0] = bytes;
  for (unsigned d = 0; d < rank; ++d) {
    if (dim[d] == 0 || dim[d] > (1ull << 32))
      return refuse("globalDim[" + std::to_string(d) + "] must be in [1, 2^32]");
    if (box[d] == 0 || box[d] > 256) return refuse("boxDim[" + std::to_string(d) + "] must be in [1, 256]");
    if (element_strides[d] != 1) return refuse("element strides other than 1 are not emulated");
    if (d > 0 && (strides[d - 1] % 16 || strides[d - 1] >= (1ull << 40)))
      return refuse("globalStrides[" + std::to_string(d - 1) + "] must be a multiple of 16 below 2^40");
    m.dim[d] = dim[d], m.box[d] = uint16_t(box[d]), m.element_stride[d] = 1;
    if (d > 0) m.stride[d] = strides[d - 1];
  }
  if (box[0] * bytes % 16) return refuse("boxDim[0] times the element size must be a multiple of 16 bytes");
  if (span && box[0] * bytes > span)
    return refuse("the box's inner dimension (" + std::to_string(box[0] * bytes) + " bytes) exceeds the " +
                  std::to_string(span) + "-byte swizzle");
  static_assert(sizeof(m) <= sizeof(CUtensorMap), "the emulator's tensor map fits CUtensorMap");
  std::memset(map, 0, sizeof(CUtensorMap));
  std::memcpy(map, &m, sizeof(m));
  return CUDA_SUCCESS;
}
