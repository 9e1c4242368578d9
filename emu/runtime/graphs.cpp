// CUDA emulator (emu/README.md): CUDA graphs by stream capture. Between cudaStreamBeginCapture and
// cudaStreamEndCapture the stream records what is queued on it (queue.h) instead of running it; an
// instantiated graph's launch queues every recorded operation again, in order, on the launching stream,
// where it runs and is checked like any other work. What a capture cannot record fails as on a GPU: a
// synchronous copy, a copy to or from pageable memory, a stream or device synchronisation, a query or an
// event record on the capturing stream invalidate it (cudaErrorStreamCaptureUnsupported at the call,
// cudaErrorStreamCaptureInvalidated at its end). Covered by tests/gpu/moe_graph_capture_test.cpp and
// tests/emu/stream_test.cpp.
#include <memory>
#include <vector>

#include "devices.h"
#include "queue.h"

struct CUgraph_st {
  std::vector<moe_emu::Recorded> ops;
};
struct CUgraphExec_st {
  std::vector<moe_emu::Recorded> ops;
};

using namespace moe_emu;

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (!stream || stream_device(stream) < 0)  // the legacy stream cannot be captured
    return set_error(cudaErrorStreamCaptureUnsupported, "cudaStreamBeginCapture: not on the legacy default stream");
  if (!begin_capture(stream_id(stream)))
    return set_error(cudaErrorIllegalInstruction, "cudaStreamBeginCapture: the stream is already capturing");
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (!stream || stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  *graph = nullptr;
  if (!capturing(stream_id(stream)))
    return set_error(cudaErrorIllegalInstruction, "cudaStreamEndCapture: the stream is not capturing");
  bool invalidated = false;
  std::vector<Recorded> ops = end_capture(stream_id(stream), &invalidated);
  if (invalidated)
    return set_error(cudaErrorStreamCaptureInvalidated, "cudaStreamEndCapture: the capture was invalidated by an "
                                                        "operation it cannot record (a wait or a pageable copy)");
  *graph = new CUgraph_st{std::move(ops)};
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  if (stream_device(stream) < 0) return set_error(cudaErrorInvalidResourceHandle);
  *status = stream && capturing(stream_id(stream)) ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph) return set_error(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->ops};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec || stream_device(stream) < 0) return set_error(cudaErrorInvalidValue);
  for (const Recorded& r : exec->ops) enqueue(stream_id(stream), r.kind, r.what + " (in a CUDA graph)", r.run);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
