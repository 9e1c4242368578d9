// CudaGraph: the device work of a piece of host code, recorded once by stream capture and replayed on
// the device's stream by launch(), with no host involvement between its kernels (a CUDA graph). The work
// must neither copy to the host nor wait for the device (an MoE layer's forward and backward do neither:
// tests/emu/moe_no_sync_test.cpp); the tensors it writes keep their memory, so a replay recomputes them in
// place from whatever their inputs then hold. Blocks freed while recording stay reserved for the graph
// (Allocator::hold_frees) until it is destroyed. Covered by tests/gpu/moe_graph_capture_test.cpp.
#pragma once
#include <functional>
#include <vector>

#include "tensor/device.h"

namespace moe {

class CudaGraph {
 public:
  /// Records the device work `work` queues on `device` (a CUDA device).
  CudaGraph(Device device, const std::function<void()>& work);
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  /// Queues the recorded work again on the device's stream.
  void launch();

 private:
  Device device_;
  void* graph_ = nullptr;
  std::vector<void*> held_;  // blocks freed while recording: the graph still uses them
};

}  // namespace moe
