// stop_request.h implementation. Covered by tests/training/stop_request_test.cpp.
#include "training/stop_request.h"

#include "common/stop_signal.h"
#include "dist/communicator.h"

namespace moe {

StopRequest::StopRequest(OnSignal mode) : mode_(mode) {
  if (mode_ == OnSignal::save_and_exit) install_stop_handlers("moe-train");
}

bool StopRequest::agreed(dist::Communicator* comm) {
  if (mode_ == OnSignal::exit) return false;
  const int64_t mine = stop_signal() != 0 ? 1 : 0;
  stopped_ = (comm && comm->world() > 1 ? comm->sum(mine) : mine) > 0;
  return stopped_;
}

std::string StopRequest::cause() const {
  return stop_signal() != 0 ? signal_name(stop_signal()) : std::string("a stop signal on another rank");
}

}  // namespace moe
