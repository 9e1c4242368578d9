// The emulator's streams (emu/runtime/queue.h, streams.cpp, host_guard.h): work is queued and runs at a
// synchronisation point, as on a GPU, so that these bugs, invisible when every call finished before it
// returned, are reported: the host reading a pinned result before synchronising, the host changing a
// pinned source before its copy ran, a second stream (or cudaMemcpy on the legacy default stream)
// using a result with no event ordering it. Each beside its correct twin (a synchronisation, an event,
// a blocking stream), which must give no report. And CUDA graphs by stream capture (emu/runtime/graphs.cpp):
// recorded work runs at each launch, and a wait or a pageable copy while capturing invalidates the capture.
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "emu/blind_spot_kernels.h"
#include "emu/emu_test_support.h"
#include "moe_emu/control.h"

using namespace moe::emu_test;

namespace {
/// "tests/emu/stream_test.cpp:LINE" of the line marked "// @marker" in this file.
std::string here(const std::string& marker) {
  std::ifstream in(std::string(MOE_SOURCE_DIR) + "/tests/emu/stream_test.cpp");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find("// @" + marker) != std::string::npos && line.find("here(\"") == std::string::npos)
      return "tests/emu/stream_test.cpp:" + std::to_string(n);
  FAIL("no line marked @" << marker);
  return "";
}

struct Streams {
  cudaStream_t a = nullptr, b = nullptr;
  explicit Streams(unsigned flags) {
    REQUIRE(cudaStreamCreateWithFlags(&a, flags) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&b, flags) == cudaSuccess);
  }
  ~Streams() {
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
  }
};
}  // namespace

TEST_CASE("queued work runs when the host synchronises; a query says not ready first", "[emu][streams]") {
  int* d = device_buffer<int>(64);
  Streams s(cudaStreamNonBlocking);
  cudaEvent_t done;
  REQUIRE(cudaEventCreate(&done) == cudaSuccess);
  write_iota(d, 64, s.a);
  REQUIRE(cudaEventRecord(done, s.a) == cudaSuccess);
  CHECK(cudaEventQuery(done) == cudaErrorNotReady);  // it runs now, but had not when asked
  CHECK(cudaEventQuery(done) == cudaSuccess);
  std::vector<int> host(64, -1);
  REQUIRE(cudaMemcpyAsync(host.data(), d, 64 * sizeof(int), cudaMemcpyDeviceToHost, s.a) == cudaSuccess);
  CHECK(host[63] == 63);  // into pageable memory the copy returns when done
  CHECK(moe_emu::take_reports().empty());
  cudaEventDestroy(done);
  cudaFree(d);
}

TEST_CASE("the host reading a pinned result before synchronising is reported", "[emu][streams]") {
  int* d = device_buffer<int>(64);
  int* pinned = nullptr;
  REQUIRE(cudaMallocHost(&pinned, 64 * sizeof(int)) == cudaSuccess);
  Streams s(cudaStreamNonBlocking);
  moe_emu::take_reports();
  write_iota(d, 64, s.a);
  REQUIRE(cudaMemcpyAsync(pinned, d, 64 * sizeof(int), cudaMemcpyDeviceToHost, s.a) == cudaSuccess);  // @copy-out
  const int early = static_cast<volatile int*>(pinned)[5];  // @early-read
  CHECK(early != 5);  // the stale bytes, as a GPU still busy with the copy would leave them
  CHECK(cudaStreamSynchronize(s.a) == cudaErrorLaunchFailure);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "pending-host-access", "the host read pinned memory", here("early-read")));
  CHECK(has(r, "pending-host-access", "cudaMemcpyAsync (device to host) at " + here("copy-out")));
  CHECK(pinned[5] == 5);
  // The twin: synchronise first.
  write_iota(d, 64, s.a);
  REQUIRE(cudaMemcpyAsync(pinned, d, 64 * sizeof(int), cudaMemcpyDeviceToHost, s.a) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s.a) == cudaSuccess);
  CHECK(static_cast<volatile int*>(pinned)[7] == 7);
  CHECK(moe_emu::take_reports().empty());
  cudaFreeHost(pinned);
  cudaFree(d);
}

TEST_CASE("the host changing a pinned source before its copy ran is reported", "[emu][streams]") {
  int* d = device_buffer<int>(16);
  int* pinned = nullptr;
  REQUIRE(cudaMallocHost(&pinned, 16 * sizeof(int)) == cudaSuccess);
  for (int i = 0; i < 16; ++i) pinned[i] = i;
  Streams s(cudaStreamNonBlocking);
  moe_emu::take_reports();
  REQUIRE(cudaMemcpyAsync(d, pinned, 16 * sizeof(int), cudaMemcpyHostToDevice, s.a) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s.a) == cudaSuccess);
  pinned[0] = 100;  // the twin: after the synchronisation
  CHECK(moe_emu::take_reports().empty());
  REQUIRE(cudaMemcpyAsync(d, pinned, 16 * sizeof(int), cudaMemcpyHostToDevice, s.a) == cudaSuccess);  // @copy-in
  pinned[1] = 101;  // before the copy ran
  CHECK(cudaStreamSynchronize(s.a) == cudaErrorLaunchFailure);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "pending-host-access", "the host changed pinned memory", here("copy-in")));
  cudaFreeHost(pinned);
  cudaFree(d);
}

TEST_CASE("a second stream using a result without an event is a stream race", "[emu][streams]") {
  int* d = device_buffer<int>(64);
  int* out = device_buffer<int>(64);
  Streams s(cudaStreamNonBlocking);
  cudaEvent_t written;
  REQUIRE(cudaEventCreateWithFlags(&written, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  moe_emu::take_reports();
  write_iota(d, 64, s.a);  // the twins: an event between the streams, or the host waiting for the first
  REQUIRE(cudaEventRecord(written, s.a) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(s.b, written, 0) == cudaSuccess);
  read_into(d, out, 64, s.b);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);  // (else the next write could overwrite d while b reads it)
  write_iota(d, 64, s.a);
  REQUIRE(cudaStreamSynchronize(s.a) == cudaSuccess);
  read_into(d, out, 64, s.b);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(moe_emu::take_reports().empty());
  write_iota(d, 64, s.a);
  read_into(d, out, 64, s.b);
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "stream-race", at("global-read"), "read_into_kernel"));
  CHECK(has(r, "stream-race", "that kernel launch at tests/emu/blind_spot_kernels.cu", "wrote"));
  cudaEventDestroy(written);
  cudaFree(d);
  cudaFree(out);
}

TEST_CASE("cudaMemcpy on the legacy default stream waits for blocking streams only", "[emu][streams]") {
  int* d = device_buffer<int>(64);
  std::vector<int> host(64, -1);
  {
    Streams blocking(cudaStreamDefault);
    moe_emu::take_reports();
    write_iota(d, 64, blocking.a);
    CHECK(cudaMemcpy(host.data(), d, 64 * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(host[9] == 9);
    CHECK(moe_emu::take_reports().empty());
  }
  Streams nonblocking(cudaStreamNonBlocking);
  write_iota(d, 64, nonblocking.a);
  CHECK(cudaMemcpy(host.data(), d, 64 * sizeof(int), cudaMemcpyDeviceToHost) == cudaErrorLaunchFailure);  // @legacy-copy
  const auto r = moe_emu::take_reports();
  INFO(all(r));
  CHECK(has(r, "stream-race", "cudaMemcpy (device to host) at " + here("legacy-copy")));
  cudaFree(d);
}

TEST_CASE("a captured stream records its work; the graph runs it at each launch", "[emu][streams][graph]") {
  int* d = device_buffer<int>(64);
  Streams s(cudaStreamNonBlocking);
  std::vector<int> host(64, -1);
  REQUIRE(cudaStreamBeginCapture(s.a, cudaStreamCaptureModeGlobal) == cudaSuccess);
  write_iota(d, 64, s.a);
  cudaStreamCaptureStatus status;
  REQUIRE(cudaStreamIsCapturing(s.a, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(s.a, &graph) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(host.data(), d, 64 * sizeof(int), cudaMemcpyDeviceToHost, s.a) == cudaSuccess);
  CHECK(host[63] == 0);  // recorded, not run
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  for (int launch = 0; launch < 2; ++launch) {
    REQUIRE(cudaMemsetAsync(d, 0, 64 * sizeof(int), s.a) == cudaSuccess);
    REQUIRE(cudaGraphLaunch(exec, s.a) == cudaSuccess);
    REQUIRE(cudaMemcpyAsync(host.data(), d, 64 * sizeof(int), cudaMemcpyDeviceToHost, s.a) == cudaSuccess);
    CHECK(host[63] == 63);
  }
  CHECK(moe_emu::take_reports().empty());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(d);
}

TEST_CASE("a wait or a pageable copy on a capturing stream invalidates the capture", "[emu][streams][graph]") {
  int* d = device_buffer<int>(64);
  Streams s(cudaStreamNonBlocking);
  std::vector<int> host(64, -1);
  for (const char* what : {"synchronize", "pageable copy", "query"}) {
    INFO(what);
    REQUIRE(cudaStreamBeginCapture(s.a, cudaStreamCaptureModeGlobal) == cudaSuccess);
    write_iota(d, 64, s.a);
    const std::string w = what;
    const cudaError_t e = w == "synchronize" ? cudaStreamSynchronize(s.a)
                          : w == "query"     ? cudaStreamQuery(s.a)
                                             : cudaMemcpyAsync(host.data(), d, 64 * sizeof(int),
                                                               cudaMemcpyDeviceToHost, s.a);
    CHECK(e == cudaErrorStreamCaptureUnsupported);
    cudaGraph_t graph = nullptr;
    CHECK(cudaStreamEndCapture(s.a, &graph) == cudaErrorStreamCaptureInvalidated);
    CHECK(graph == nullptr);
    cudaGetLastError();
    CHECK(host[0] == -1);
  }
  REQUIRE(cudaStreamSynchronize(s.a) == cudaSuccess);  // the stream works again after the failed capture
  cudaFree(d);
}
