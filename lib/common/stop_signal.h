// Stopping cleanly on a signal. install_stop_handlers() makes SIGTERM (a scheduler's preemption, kill),
// SIGINT (Ctrl-C) and SIGUSR1 (what mpirun forwards to its ranks; Slurm's --signal=USR1@T) set a flag
// instead of ending the process; the programs poll it at points where stopping loses nothing that was
// promised (moe-train between micro-batches, moe-translate between batches) and exit with
// kExitStopped. A second SIGINT ends the process at once (the default action: status 130). SIGINT that
// was ignored when the program started (a background job of a script) stays ignored.
// The handler only stores the signal number and, for SIGINT, writes one line to stderr (both
// async-signal-safe). Covered by tests/unit/stop_signal_test.cpp and tests/scripts/train_signals.sh.
#pragma once
#include <string>

#include "common/error.h"

namespace moe {

/// The exit status of a program that stopped cleanly on a signal (sysexits.h EX_TEMPFAIL: "try again
/// later"): moe-train saved checkpoint.last (continue with --resume); moe-translate wrote complete lines only.
constexpr int kExitStopped = 75;

/// Installs the handlers (again at each call). `program` (of the first call) names the process in the SIGINT line.
void install_stop_handlers(const char* program);
/// The first stop signal received since the handlers were installed (0: none).
int stop_signal();
/// Forgets a received signal (tests).
void clear_stop_signal();
/// "SIGTERM", "SIGINT", "SIGUSR1", else "signal N".
std::string signal_name(int signal);

/// What a program's loop throws when a stop signal has arrived; its main catches it before moe::Error and
/// exits with kExitStopped.
class Interrupted : public Error {
 public:
  Interrupted(int signal, const std::string& message) : Error(message), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

/// Throws Interrupted ("<what>: stopped by SIGTERM<detail>") when a stop signal has arrived.
void throw_if_stopped(const std::string& what, const std::string& detail = "");

}  // namespace moe
