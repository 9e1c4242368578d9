// CUDA emulator: streams, events, copies and memsets of emu/include/cuda_runtime.h over the queue
// (queue.h). Work is queued and runs at a synchronisation point, with CUDA's host-side rules:
//   a copy to pageable host memory returns when it is done (the call synchronises its stream);
//   a copy from pageable memory reads it when queued (CUDA stages it), one from pinned memory when it
//     runs, and a pinned source the host changed meanwhile is a pending-host-access report;
//   a copy into pinned memory guards it until it runs (host_guard.h);
//   cudaMemcpy and cudaMemset use the legacy default stream; cudaMemcpy returns when done.
// Device pointers are checked against the allocations when queued (CUDA's invalid-argument errors)
// and against live tensors when run; every copy and memset updates the device-memory shadow
// (global_shadow.h). Queries run the work they ask about and say cudaErrorNotReady the first time,
// as a busy GPU would. Covered by tests/emu/stream_test.cpp and every emulated test.
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "devices.h"
#include "global_shadow.h"
#include "host_guard.h"
#include "memory.h"
#include "moe_emu/control.h"
#include "queue.h"
#include "reports.h"

struct CUevent_st {
  struct State {
    double ms = 0;
    uint32_t done = 0;  // serial of the last record that ran
  };
  std::shared_ptr<State> state = std::make_shared<State>();
  bool timing = true, recorded = false;
  uint32_t serial = 0;  // of the last record
  moe_emu::Clock clock;
};

namespace moe_emu {
void register_stream(cudaStream_t stream, bool live);  // api.cpp
namespace {
struct AtomicTraffic {
  std::atomic<uint64_t> copies_to_host{0}, host_waits{0};
} g_traffic;

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

std::string where(const std::string& call, const std::source_location& site) {
  return call + " at " + call_site(site.file_name(), site.line());
}

/// A bad pointer when queued: reported like a checker finding, returned as CUDA's invalid argument.
cudaError_t bad_pointer(const std::string& call, const char* which, const void* p, size_t bytes,
                        const std::string& problem, bool queued_error) {
  char head[200];
  std::snprintf(head, sizeof(head), "%s: %s %p (%zu bytes) is ", call.c_str(), which, p, bytes);
  const std::string text = publish_api_report(ReportKind::api_misuse, head + problem);
  return queued_error ? set_message(cudaErrorInvalidValue, text) : set_error(cudaErrorInvalidValue, text);
}

enum class Side { host, pinned, device };

Side side_of(const void* p, size_t bytes) {
  const Located at = locate(reinterpret_cast<uintptr_t>(p), bytes ? bytes : 1, false);
  if (at.device == kHostDevice && at.ok) return Side::pinned;
  if (at.problem == "not in any device allocation") return Side::host;
  return at.device == kHostDevice ? Side::pinned : Side::device;
}

/// When queued: [p, p + bytes) lies in one allocation (cudaMalloc block or pinned buffer).
bool allocation_ok(const std::string& call, const char* which, const void* p, size_t bytes) {
  const Located at = locate(reinterpret_cast<uintptr_t>(p), bytes, false);
  if (at.ok) return true;
  bad_pointer(call, which, p, bytes, at.problem, false);
  return false;
}

/// When run: [p, p + bytes) of device memory lies in a live tensor (inside a cached block too).
bool live_ok(const std::string& call, const char* which, const void* p, size_t bytes) {
  const Located at = locate(reinterpret_cast<uintptr_t>(p), bytes);
  if (at.ok) return true;
  bad_pointer(call, which, p, bytes, at.problem, true);
  return false;
}

cudaError_t shadow_problem(const std::string& what, const std::string& problem) {
  if (problem.empty()) return cudaSuccess;
  return set_message(cudaErrorLaunchFailure, publish_api_report(ReportKind::stream_race, what + ": " + problem));
}

cudaError_t copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream, bool sync,
                 const std::source_location& site) {
  const char* name = sync ? "cudaMemcpy" : "cudaMemcpyAsync";
  if (stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  const Side ds = side_of(dst, bytes), ss = side_of(src, bytes);
  bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind == cudaMemcpyDefault) dst_dev = ds == Side::device, src_dev = ss == Side::device;
  if (bytes == 0) return cudaSuccess;
  const std::string what = where(std::string(name) + (dst_dev ? src_dev ? " (device to device)" : " (host to device)"
                                                                       : src_dev ? " (device to host)" : " (host to host)"),
                                 site);
  if ((dst_dev && !allocation_ok(what, "destination", dst, bytes)) || (src_dev && !allocation_ok(what, "source", src, bytes)))
    return cudaErrorInvalidValue;
  const bool pinned_src_side = !src_dev && ss == Side::pinned, pinned_dst_side = !dst_dev && ds == Side::pinned;
  if (capturing(stream_id(stream)) && (sync || (!src_dev && !pinned_src_side) || (!dst_dev && !pinned_dst_side))) {
    invalidate_capture(stream_id(stream));
    return set_error(cudaErrorStreamCaptureUnsupported, what + ": a synchronous copy, or one with pageable host "
                                                                "memory, cannot be captured into a CUDA graph");
  }
  // A pageable source is staged when queued; a pinned one is read when the copy runs.
  auto staged = std::make_shared<std::vector<unsigned char>>();
  if (!src_dev) staged->assign(static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
  const bool pinned_src = !src_dev && ss == Side::pinned, pinned_dst = !dst_dev && ds == Side::pinned;
  const uint32_t serial = enqueue(stream_id(stream), OpKind::copy, what, [=](const Op& op) -> cudaError_t {
    if (pinned_dst) release_guard(op.serial);
    if ((dst_dev && !live_ok(what, "destination", dst, bytes)) || (src_dev && !live_ok(what, "source", src, bytes)))
      return cudaErrorInvalidValue;
    std::string problem;
    if (pinned_src && std::memcmp(staged->data(), src, bytes) != 0) {
      char text[160];
      std::snprintf(text, sizeof(text), "the host changed pinned memory %p (%zu bytes) before ", src, bytes);
      return set_message(cudaErrorLaunchFailure,
                         publish_api_report(ReportKind::host_access, text + what +
                                                                         ", which reads it, had run: synchronise first"));
    }
    const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
    if (dst_dev && src_dev) problem = shadow_op_copy(d, s, bytes, op);
    else if (dst_dev) problem = shadow_op_write(d, bytes, op);
    else if (src_dev) problem = shadow_op_read(s, bytes, op, false);
    std::memmove(dst, src_dev || pinned_src ? src : staged->data(), bytes);
    return shadow_problem(what, problem);
  });
  if (pinned_dst && !finished(serial)) guard_pending(reinterpret_cast<uintptr_t>(dst), bytes, serial, what);
  if (src_dev && !dst_dev) ++g_traffic.copies_to_host;
  if (sync || (!dst_dev && !pinned_dst)) {  // cudaMemcpy, or into pageable memory: returns when done
    ++g_traffic.host_waits;
    run_until(serial);
    host_observes(stream_clock(stream_id(stream)));
    return take_async_error(true);
  }
  return cudaSuccess;
}

cudaError_t fill(void* ptr, int value, size_t bytes, cudaStream_t stream, const char* name,
                 const std::source_location& site) {
  if (stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  const std::string what = where(name, site);
  if (bytes == 0) return cudaSuccess;
  if (!allocation_ok(what, "destination", ptr, bytes)) return cudaErrorInvalidValue;
  enqueue(stream_id(stream), OpKind::memset, what, [=](const Op& op) -> cudaError_t {
    if (!live_ok(what, "destination", ptr, bytes)) return cudaErrorInvalidValue;
    const std::string problem = shadow_op_write(reinterpret_cast<uintptr_t>(ptr), bytes, op);
    std::memset(ptr, value, bytes);
    return shadow_problem(what, problem);
  });
  return cudaSuccess;
}

/// Queries: run the work asked about; cudaErrorNotReady if it had not run yet.
cudaError_t query(uint32_t serial, const Clock& clock) {
  if (!finished(serial)) {
    run_until(serial);
    return cudaErrorNotReady;
  }
  host_observes(clock);
  return take_async_error(true);
}
}  // namespace
}  // namespace moe_emu

using namespace moe_emu;

moe_emu::HostTraffic moe_emu::host_traffic() { return HostTraffic{g_traffic.copies_to_host, g_traffic.host_waits}; }
void moe_emu::note_host_wait() { ++g_traffic.host_waits; }

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  const int device = current_device();
  *stream = new CUstream_st{device, new_stream(device, !(flags & cudaStreamNonBlocking))};
  register_stream(*stream, true);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!stream || stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  register_stream(stream, false);
  retire_stream(stream->id);  // its queued work still runs, as on a GPU
  delete stream;
  return cudaSuccess;
}
namespace {
/// A wait or query on a capturing stream ends its capture's validity.
cudaError_t capture_refuses(cudaStream_t stream, const char* call) {
  invalidate_capture(stream_id(stream));
  return set_error(cudaErrorStreamCaptureUnsupported,
                   std::string(call) + " on a stream that is capturing a CUDA graph (the capture is invalidated)");
}
}  // namespace

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  if (capturing(stream_id(stream))) return capture_refuses(stream, "cudaStreamSynchronize");
  ++g_traffic.host_waits;
  const StreamId id = stream_id(stream);
  run_until(stream_last(id));
  host_observes(stream_clock(id));
  return take_async_error(true);
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  if (stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  if (capturing(stream_id(stream))) return capture_refuses(stream, "cudaStreamQuery");
  const StreamId id = stream_id(stream);
  return query(stream_last(id), stream_clock(id));
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (stream_device(stream) < 0 || !event) return set_error(cudaErrorInvalidResourceHandle);
  if (event->recorded) stream_waits(stream_id(stream), event->clock);  // an unrecorded event: nothing to wait for
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                            std::source_location site) {
  return copy(dst, src, bytes, kind, stream, false, site);
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, std::source_location site) {
  return copy(dst, src, bytes, kind, nullptr, true, site);
}
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream, std::source_location site) {
  return fill(ptr, value, bytes, stream, "cudaMemsetAsync", site);
}
cudaError_t cudaMemset(void* ptr, int value, size_t bytes, std::source_location site) {
  return fill(ptr, value, bytes, nullptr, "cudaMemset", site);
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  *event = new CUevent_st;
  (*event)->timing = !(flags & cudaEventDisableTiming);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;  // a queued record keeps its state alive
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream, std::source_location site) {
  if (stream_device(stream) >= 0 && capturing(stream_id(stream))) return capture_refuses(stream, "cudaEventRecord");
  if (!event || stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  const StreamId id = stream_id(stream);
  event->serial = enqueue(id, OpKind::event, where("cudaEventRecord", site),
                          [state = event->state](const Op& op) {
                            if (op.serial > state->done) state->done = op.serial, state->ms = now_ms();
                            return cudaSuccess;
                          });
  event->clock = stream_clock(id);
  event->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  ++g_traffic.host_waits;
  if (!event) return set_error(cudaErrorInvalidResourceHandle);
  if (!event->recorded) return cudaSuccess;
  run_until(event->serial);
  host_observes(event->clock);
  return take_async_error(true);
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!event) return set_error(cudaErrorInvalidResourceHandle);
  return event->recorded ? query(event->serial, event->clock) : cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end || !start->recorded || !end->recorded || !start->timing || !end->timing)
    return set_error(cudaErrorInvalidResourceHandle);
  if (start->state->done < start->serial || end->state->done < end->serial) return cudaErrorNotReady;
  *ms = static_cast<float>(end->state->ms - start->state->ms);
  return cudaSuccess;
}
