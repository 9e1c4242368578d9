// What moe-train does on SIGTERM, SIGINT or SIGUSR1 (train.on_signal, parsed once into OnSignal):
//   save-and-exit (default): stop before the next micro-batch (train.update_freq > 1: the update in
//     flight is dropped when no optimizer step of it has run, and finished otherwise), write checkpoint.last
//     and its training state as of the last finished update (atomically, as every save), log it and exit
//     with status 75 (common/stop_signal.h kExitStopped); --resume then continues exactly. A second SIGINT
//     exits at once.
//   exit: the signals keep their default action (the process ends at once; --resume continues from the
//     last checkpoint saved).
// With several ranks, every rank calls agreed() at the top of every update and between micro-batches: an
// all-reduce of the ranks' flags, so all of them stop at the same point, even when the signal reached only
// some of them.
// The handlers are installed when the training loop starts: before it, there is nothing to save and a
// signal ends the process as usual.
// Covered by tests/training/stop_request_test.cpp and tests/scripts/train_signals.sh (1 and 2 MPI ranks).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moe {

namespace dist {
class Communicator;
}

/// train.on_signal. Names by hand: "save-and-exit" is not an identifier.
enum class OnSignal { save_and_exit, exit };
inline const std::vector<std::string>& enum_names(OnSignal) {
  static const std::vector<std::string> names{"save-and-exit", "exit"};
  return names;
}

class StopRequest {
 public:
  /// save_and_exit: installs the handlers (install_stop_handlers); exit: leaves the signals alone.
  explicit StopRequest(OnSignal mode);
  /// True when a stop signal reached this process or, with several ranks, any rank (a collective).
  bool agreed(dist::Communicator* comm);
  bool stopped() const { return stopped_; }
  /// "SIGTERM" (this process's signal), or "a stop signal on another rank".
  std::string cause() const;

 private:
  OnSignal mode_;
  bool stopped_ = false;
};

}  // namespace moe
