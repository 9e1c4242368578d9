// index_errors.h: op names and the public check (a no-op without CUDA or on the CPU).
#include "ops/index_errors.h"

namespace moe {

const char* index_op_name(IndexOp op) {
  switch (op) {
    case IndexOp::embedding:
      return "embedding";
    case IndexOp::index_select:
      return "index_select";
    case IndexOp::index_add:
      return "index_add";
    case IndexOp::gather_last:
      return "gather_last";
    case IndexOp::scatter_add_last:
      return "scatter_add_last";
  }
  return "index op";
}

void check_index_errors(Device device) {
#ifdef MOE_WITH_CUDA
  if (device.is_cuda()) cuda::poll_index_errors(device.index);
#else
  (void)device;
#endif
}

}  // namespace moe
