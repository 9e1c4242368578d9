// CUDA emulator (emu/README.md): deferred stream execution, as on a GPU. Every launch, copy, memset,
// event record and library call is queued on its stream and runs only when the host synchronises
// (cudaStreamSynchronize, cudaEventSynchronize/Query, cudaDeviceSynchronize, a synchronous cudaMemcpy,
// cudaFree), when a copy to pageable memory makes the call synchronous, or when more than 4,096
// operations wait (a GPU's queue is finite too). Queued work runs in queue order; what each operation
// may rely on is its vector clock: clock[s] is the serial of the latest operation of stream s ordered
// before it (its own stream's earlier work, events it waits for, the legacy default stream's
// implicit synchronisation with blocking streams, and whatever the host saw complete before queueing
// it). The checker compares device memory accesses against these clocks (global_shadow.h), so a second
// stream using a result without an event is reported even though the queue ran it in order.
// CUDA_LAUNCH_BLOCKING=1 runs every operation when it is queued (the clocks still apply).
// Covered by tests/emu/stream_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cuda_runtime.h"

namespace moe_emu {

using StreamId = uint16_t;
constexpr StreamId kNoStream = 0xffff;  // bookkeeping of the allocation table: ordered, on no stream

/// clock[s]: the serial of the latest operation of stream s ordered before the owner (0: none).
using Clock = std::vector<uint32_t>;
void join(Clock& into, const Clock& other);
/// Whether operation `serial` of stream `s` is ordered before the owner of `c`.
inline bool ordered_before(const Clock& c, StreamId s, uint32_t serial) { return s < c.size() && c[s] >= serial; }

enum class OpKind { kernel, copy, memset, event, library, bookkeeping };

struct Op {
  uint32_t serial = 0;
  StreamId stream = kNoStream;
  OpKind kind = OpKind::bookkeeping;
  Clock clock;
  std::string what;  // "cudaMemcpyAsync (device to host) at cuda/tensor/cuda_runtime.cu:160"
  std::function<cudaError_t(const Op&)> run;
};

StreamId new_stream(int device, bool blocking);
/// The legacy default stream (stream 0 of CUDA's API) of `device`.
StreamId legacy_stream(int device);
void retire_stream(StreamId stream);
int device_of(StreamId stream);

/// Queues `run` on `stream` and returns its serial (with CUDA_LAUNCH_BLOCKING=1 it has run on return); on
/// a capturing stream it is recorded instead and 0 is returned (nothing to wait for).
uint32_t enqueue(StreamId stream, OpKind kind, std::string what, std::function<cudaError_t(const Op&)> run);

/// Stream capture (CUDA graphs, graphs.cpp): what a capturing stream records, in order.
struct Recorded {
  OpKind kind;
  std::string what;
  std::function<cudaError_t(const Op&)> run;
};
/// Starts recording `stream` (false if it already records).
bool begin_capture(StreamId stream);
/// Stops it and hands over what it recorded (and whether the capture was invalidated).
std::vector<Recorded> end_capture(StreamId stream, bool* invalidated);
/// Whether `stream` records; `any`: whether some stream of the device does.
bool capturing(StreamId stream);
bool capturing_any();
/// Something the capture cannot record happened on `stream` (a wait, a pageable copy): it fails at its end.
void invalidate_capture(StreamId stream);
/// Runs every queued operation with a serial up to `serial`, in queue order; errors of the operations
/// that ran are kept for take_async_error.
void run_until(uint32_t serial);
void run_all();
bool finished(uint32_t serial);
/// The clock after the last operation queued on `stream`, and that operation's serial.
Clock stream_clock(StreamId stream);
uint32_t stream_last(StreamId stream);
/// cudaStreamWaitEvent: later work of `stream` is ordered after what `clock` covers.
void stream_waits(StreamId stream, const Clock& clock);
/// The host saw everything `clock` covers complete: work it queues from now on is ordered after it.
void host_observes(const Clock& clock);
/// Runs everything queued and observes every stream (cudaDeviceSynchronize, cudaFree).
void synchronize_all();
/// The operation running now (the checker reads it from kernels' threads), or nullptr.
const Op* running_op();
/// What a recent operation was ("kernel launch at ...", "cudaMemsetAsync at ..."), by serial.
std::string describe_op(uint32_t serial);
/// The first error of an operation that ran since the last take (cudaSuccess if none); the text
/// goes to the calling thread's error message. `clear`: false for cudaPeekAtLastError.
cudaError_t take_async_error(bool clear);

/// "FILE:LINE" of a call site, for the `what` of operations.
std::string call_site(const char* file, unsigned line);

}  // namespace moe_emu
