// CUDA emulator: cub::DeviceRadixSort::SortPairs (emu/include/cub/device/device_radix_sort.cuh) for
// i32 keys and values: a stable sort by the key bits [begin_bit, end_bit) in cub's order for signed
// keys (negative before positive). The temporary storage protocol is cub's: a first call with a null
// buffer asks for the size, and less than that is an error. As cub's documentation says, none of the
// five buffers may overlap another (no in-place sort): an api-misuse report when called. The sort is
// queued on the stream; when it runs, each buffer must lie in a live tensor and the inputs must have
// been written (blas_checks.h). Covered by the embedding and gather/scatter parity tests
// (deterministic row scatter) and tests/emu/blind_spot_test.cpp.
#include <algorithm>
#include <numeric>
#include <vector>

#include "blas_checks.h"
#include "cub/device/device_radix_sort.cuh"

namespace cub {

cudaError_t DeviceRadixSort::SortPairs(void* temp, size_t& temp_bytes, const int* keys_in, int* keys_out,
                                       const int* values_in, int* values_out, int n, int begin_bit, int end_bit,
                                       cudaStream_t stream, std::source_location site) {
  using namespace moe_emu;
  if (n < 0 || begin_bit < 0 || end_bit > 32 || begin_bit >= end_bit) return set_error(cudaErrorInvalidValue);
  const size_t need = size_t(n) * 2 * sizeof(int) + 1;
  if (!temp) {
    temp_bytes = need;
    return cudaSuccess;
  }
  if (stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  if (temp_bytes < need)
    return set_error(cudaErrorInvalidValue,
                     publish_api_report(ReportKind::api_misuse, "cub::DeviceRadixSort::SortPairs: temporary storage of " +
                                                                    std::to_string(temp_bytes) + " bytes, below the " +
                                                                    std::to_string(need) + " asked for"));
  const std::string call = "cub::DeviceRadixSort::SortPairs at " + call_site(site.file_name(), site.line());
  const size_t bytes = sizeof(int) * size_t(n);
  struct Buffer {
    Span span;
    const char* name;
    bool input;
  };
  const Buffer buffers[] = {{{reinterpret_cast<uintptr_t>(temp), temp_bytes}, "temporary storage", false},
                            {{reinterpret_cast<uintptr_t>(keys_in), bytes}, "keys_in", true},
                            {{reinterpret_cast<uintptr_t>(keys_out), bytes}, "keys_out", false},
                            {{reinterpret_cast<uintptr_t>(values_in), bytes}, "values_in", true},
                            {{reinterpret_cast<uintptr_t>(values_out), bytes}, "values_out", false}};
  for (const Buffer& x : buffers)
    for (const Buffer& y : buffers)
      if (&x < &y && overlap(x.span, y.span) && aliasing(call, std::string(x.name) + " overlaps " + y.name))
        return set_error(cudaErrorInvalidValue, call + ": " + x.name + " overlaps " + y.name);
  const int device = stream_device(stream);
  enqueue(stream_id(stream), OpKind::library, call, [=](const Op& op) {
    for (const Buffer& x : buffers)
      if (const cudaError_t e = operand_runs(call, x.name, x.span, device, op, !x.input, x.input); e != cudaSuccess)
        return e;
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
  });
  return cudaSuccess;
}

}  // namespace cub
