// CUDA emulator: cub::DeviceRadixSort::SortPairs (emu/include/cub/device/device_radix_sort.cuh) for
// i32 keys and values: a stable sort by the key bits [begin_bit, end_bit) in cub's order for signed
// keys (negative before positive), over buffers checked against the allocation table. The temporary
// storage protocol is cub's: a first call with a null buffer asks for the size. Covered by the
// embedding and gather/scatter parity tests (deterministic row scatter).
#include <algorithm>
#include <numeric>
#include <vector>

#include "cub/device/device_radix_sort.cuh"
#include "devices.h"
#include "memory.h"
#include "reports.h"

namespace cub {

cudaError_t DeviceRadixSort::SortPairs(void* temp, size_t& temp_bytes, const int* keys_in, int* keys_out,
                                       const int* values_in, int* values_out, int n, int begin_bit, int end_bit,
                                       cudaStream_t stream) {
  using namespace moe_emu;
  if (n < 0 || begin_bit < 0 || end_bit > 32 || begin_bit >= end_bit) return set_error(cudaErrorInvalidValue);
  const size_t need = size_t(n) * 2 * sizeof(int) + 1;
  if (!temp) {
    temp_bytes = need;
    return cudaSuccess;
  }
  if (stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  const struct {
    const void* p;
    size_t bytes;
    const char* name;
  } buffers[] = {{temp, temp_bytes, "temporary storage"}, {keys_in, sizeof(int) * size_t(n), "keys_in"},
                 {keys_out, sizeof(int) * size_t(n), "keys_out"}, {values_in, sizeof(int) * size_t(n), "values_in"},
                 {values_out, sizeof(int) * size_t(n), "values_out"}};
  if (temp_bytes < need)
    return set_error(cudaErrorInvalidValue,
                     publish_api_report(ReportKind::api_misuse, "cub::DeviceRadixSort::SortPairs: temporary storage of " +
                                                                    std::to_string(temp_bytes) + " bytes, below the " +
                                                                    std::to_string(need) + " asked for"));
  for (const auto& b : buffers) {
    if (!b.bytes) continue;
    const Located at = locate(reinterpret_cast<uintptr_t>(b.p), b.bytes);
    if (!at.ok)
      return set_error(cudaErrorIllegalAddress,
                       publish_api_report(ReportKind::out_of_bounds, std::string("cub::DeviceRadixSort::SortPairs: ") +
                                                                         b.name + " is " + at.problem));
  }
  const unsigned mask = end_bit - begin_bit == 32 ? 0xffffffffu : ((1u << (end_bit - begin_bit)) - 1) << begin_bit;
  auto bits = [&](int key) { return (static_cast<unsigned>(key) ^ 0x80000000u) & mask; };  // signed order
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return bits(keys_in[x]) < bits(keys_in[y]); });
  std::vector<int> k(static_cast<size_t>(n)), v(static_cast<size_t>(n));
  for (size_t i = 0; i < order.size(); ++i) k[i] = keys_in[order[i]], v[i] = values_in[order[i]];
  std::copy(k.begin(), k.end(), keys_out);
  std::copy(v.begin(), v.end(), values_out);
  return cudaSuccess;
}

}  // namespace cub
