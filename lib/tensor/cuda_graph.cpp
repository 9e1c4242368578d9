// cuda_graph.h: stream capture around the work, with the allocator holding the blocks it frees meanwhile.
// Covered by tests/gpu/moe_graph_capture_test.cpp.
#include "tensor/cuda_graph.h"

#include "common/error.h"
#include "tensor/allocator.h"
#include "tensor/cuda_runtime.h"

namespace moe {

CudaGraph::CudaGraph(Device device, const std::function<void()>& work) : device_(device) {
  MOE_CHECK(device.is_cuda(), "CudaGraph: ", device, " is not a CUDA device");
  Allocator& a = allocator_for(device);
  a.hold_frees(true);
  cuda::begin_capture(device.index);
  try {
    work();
    graph_ = cuda::end_capture(device.index);  // fails when the work did what a capture cannot record
  } catch (...) {
    if (!graph_) {
      try {
        cuda::destroy_graph(cuda::end_capture(device.index));
      } catch (...) {  // the capture had already ended (end_capture threw)
      }
    }
    a.hold_frees(false);
    a.return_blocks(a.take_held());
    throw;
  }
  a.hold_frees(false);
  held_ = a.take_held();
}

CudaGraph::~CudaGraph() {
  cuda::synchronize(device_.index);  // a replay in flight may still use the held blocks
  cuda::destroy_graph(graph_);
  allocator_for(device_).return_blocks(held_);
}

void CudaGraph::launch() { cuda::launch_graph(graph_, device_.index); }

}  // namespace moe
