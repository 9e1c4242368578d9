// CUDA emulator: deferred stream execution (queue.h). One queue in serial order holds the operations of
// every stream; a host thread that synchronises runs the queue's head up to what it waits for (one
// runner at a time; others may queue meanwhile). Clocks: a stream's clock joins the host's
// observations at every enqueue, the legacy stream's joins every blocking stream of its device and a
// blocking stream's joins the legacy stream's (CUDA's implicit synchronisation of stream 0).
// Covered by tests/emu/stream_test.cpp and every emulated test (all work goes through here).
#include "queue.h"

#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "devices.h"
#include "host_guard.h"
#include "reports.h"

namespace moe_emu {
namespace {
constexpr size_t kMaxQueued = 4096;  // then the oldest half runs, as a GPU's full queue blocks the host

struct StreamState {
  int device = 0;
  bool blocking = true, legacy = false, retired = false;
  Clock clock;
  uint32_t last = 0;
  bool capturing = false, invalidated = false;
  std::vector<Recorded> recorded;
};

struct State {
  std::mutex mutex;      // everything below but the runner
  std::mutex run_mutex;  // one runner at a time
  std::vector<StreamState> streams;
  std::map<int, StreamId> legacy;
  std::deque<std::unique_ptr<Op>> queue;
  std::deque<std::pair<uint32_t, std::string>> recent;  // what the last operations were
  Clock host;
  uint32_t serial = 0;
  cudaError_t async = cudaSuccess;
  std::string async_text;
  const Op* running = nullptr;
};
/// Created on first use and never destroyed: tensors freed by static destructors at exit still queue
/// their notes.
State& state() {
  static State* s = new State;
  return *s;
}

bool blocking_launches() {
  static const bool on = [] {
    const char* v = std::getenv("CUDA_LAUNCH_BLOCKING");
    return v && v[0] == '1';
  }();
  return on;
}

StreamId add_stream(int device, bool blocking, bool legacy) {
  state().streams.push_back(StreamState{device, blocking, legacy, false, {}, 0, false, false, {}});
  return StreamId(state().streams.size() - 1);
}
}  // namespace

void join(Clock& into, const Clock& other) {
  if (into.size() < other.size()) into.resize(other.size(), 0);
  for (size_t i = 0; i < other.size(); ++i)
    if (other[i] > into[i]) into[i] = other[i];
}

std::string call_site(const char* file, unsigned line) {
  static auto* mutex = new std::mutex;
  static auto* paths = new std::map<const char*, std::string>;  // source_location's file names are static strings
  std::lock_guard<std::mutex> lock(*mutex);
  auto it = paths->find(file);
  if (it == paths->end()) it = paths->emplace(file, source_path(file)).first;
  return it->second + ":" + std::to_string(line);
}

StreamId new_stream(int device, bool blocking) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return add_stream(device, blocking, false);
}

StreamId legacy_stream(int device) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto it = state().legacy.find(device);
  if (it != state().legacy.end()) return it->second;
  const StreamId id = add_stream(device, true, true);
  state().legacy[device] = id;
  return id;
}

void retire_stream(StreamId stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().streams[stream].retired = true;
}

int device_of(StreamId stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().streams[stream].device;
}

uint32_t enqueue(StreamId stream, OpKind kind, std::string what, std::function<cudaError_t(const Op&)> run) {
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (stream != kNoStream && state().streams[stream].capturing) {
      state().streams[stream].recorded.push_back(Recorded{kind, std::move(what), std::move(run)});
      return 0;
    }
  }
  auto op = std::make_unique<Op>();
  op->stream = stream, op->kind = kind, op->what = std::move(what), op->run = std::move(run);
  uint32_t serial = 0, oldest = 0;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    serial = op->serial = ++state().serial;
    if (stream != kNoStream) {
      StreamState& s = state().streams[stream];
      join(s.clock, state().host);
      for (const StreamState& o : state().streams)
        if (&o != &s && o.device == s.device && !o.retired && ((s.legacy && o.blocking) || (s.blocking && o.legacy)))
          join(s.clock, o.clock);
      if (s.clock.size() <= stream) s.clock.resize(size_t(stream) + 1, 0);
      s.clock[stream] = serial;
      s.last = serial;
      op->clock = s.clock;
    }
    state().recent.emplace_back(serial, op->what);
    if (state().recent.size() > kMaxQueued) state().recent.pop_front();
    state().queue.push_back(std::move(op));
    if (state().queue.size() > kMaxQueued) oldest = state().queue[kMaxQueued / 2]->serial;
  }
  if (blocking_launches()) run_until(serial);
  else if (oldest) run_until(oldest);
  return serial;
}

void run_until(uint32_t serial) {
  std::lock_guard<std::mutex> runner(state().run_mutex);
  while (true) {
    std::unique_ptr<Op> op;
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      if (state().queue.empty() || state().queue.front()->serial > serial) return;
      op = std::move(state().queue.front());
      state().queue.pop_front();
      state().running = op.get();
    }
    const cudaError_t e = op->run(*op);
    std::lock_guard<std::mutex> lock(state().mutex);
    state().running = nullptr;
    if (e != cudaSuccess && state().async == cudaSuccess) {
      state().async = e;
      state().async_text = cudaGetErrorString(e);  // the runner's message for it (reports name kernel and line)
    }
  }
}

void run_all() {
  uint32_t last;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    last = state().serial;
  }
  run_until(last);
}

bool finished(uint32_t serial) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().queue.empty() || state().queue.front()->serial > serial;
}

Clock stream_clock(StreamId stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().streams[stream].clock;
}

uint32_t stream_last(StreamId stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().streams[stream].last;
}

void stream_waits(StreamId stream, const Clock& clock) {
  std::lock_guard<std::mutex> lock(state().mutex);
  join(state().streams[stream].clock, clock);
}

void host_observes(const Clock& clock) {
  std::lock_guard<std::mutex> lock(state().mutex);
  join(state().host, clock);
}

void synchronize_all() {
  run_all();
  std::lock_guard<std::mutex> lock(state().mutex);
  for (const StreamState& s : state().streams) join(state().host, s.clock);
}

bool begin_capture(StreamId stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  StreamState& s = state().streams[stream];
  if (s.capturing) return false;
  s.capturing = true, s.invalidated = false, s.recorded.clear();
  return true;
}

std::vector<Recorded> end_capture(StreamId stream, bool* invalidated) {
  std::lock_guard<std::mutex> lock(state().mutex);
  StreamState& s = state().streams[stream];
  *invalidated = s.invalidated || !s.capturing;
  s.capturing = false;
  return std::move(s.recorded);
}

bool capturing(StreamId stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return stream != kNoStream && state().streams[stream].capturing;
}

bool capturing_any() {
  std::lock_guard<std::mutex> lock(state().mutex);
  for (const StreamState& s : state().streams)
    if (s.capturing) return true;
  return false;
}

void invalidate_capture(StreamId stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().streams[stream].invalidated = true;
}

const Op* running_op() { return state().running; }

std::string describe_op(uint32_t serial) {
  std::lock_guard<std::mutex> lock(state().mutex);
  for (auto it = state().recent.rbegin(); it != state().recent.rend(); ++it)
    if (it->first == serial) return it->second;
  return "operation #" + std::to_string(serial);
}

cudaError_t take_async_error(bool clear) {
  cudaError_t e;
  std::string text;
  const std::string hit = take_guard_hits();
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (!hit.empty() && state().async == cudaSuccess) state().async = cudaErrorLaunchFailure, state().async_text = hit;
    e = state().async;
    text = state().async_text;
    if (clear) state().async = cudaSuccess, state().async_text.clear();
  }
  return set_message(e, text);
}

}  // namespace moe_emu
