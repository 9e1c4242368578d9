// stop_signal.h implementation. Covered by tests/unit/stop_signal_test.cpp.
#include "common/stop_signal.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>

namespace moe {

namespace {
std::atomic<int> g_signal{0};
char g_sigint_line[160];  // written by the handler on the first SIGINT
size_t g_sigint_line_size = 0;

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) {
    if (sig == SIGINT && g_sigint_line_size > 0) (void)!::write(STDERR_FILENO, g_sigint_line, g_sigint_line_size);
    return;
  }
  if (sig == SIGINT) {  // the second Ctrl-C: end now, as if no handler were installed
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}
}  // namespace

void install_stop_handlers(const char* program) {
  static std::once_flag once;
  static bool sigint_ignored = false;  // at the first call: a background job of a script
  std::call_once(once, [program] {
    const std::string line =
        std::string("\n") + program + ": SIGINT: stopping at the next safe point; press Ctrl-C again to exit at once\n";
    g_sigint_line_size = std::min(line.size(), sizeof g_sigint_line);
    std::memcpy(g_sigint_line, line.data(), g_sigint_line_size);
    struct sigaction old {};
    sigaction(SIGINT, nullptr, &old);
    sigint_ignored = old.sa_handler == SIG_IGN;
  });
  // Installed at every call: a test framework may have put its own handlers back in between.
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // Reads and writes in flight go on (the loops poll the flag); on a thread with an alternate signal stack
  // (common/signal_stack.h: those that run oneDNN's GEMMs) the handler runs there.
  sa.sa_flags = SA_RESTART | SA_ONSTACK;
  for (int sig : {SIGTERM, SIGINT, SIGUSR1})
    if (sig != SIGINT || !sigint_ignored) sigaction(sig, &sa, nullptr);
}

int stop_signal() { return g_signal.load(std::memory_order_relaxed); }

void clear_stop_signal() { g_signal.store(0); }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "signal " + std::to_string(signal);
  }
}

void throw_if_stopped(const std::string& what, const std::string& detail) {
  const int sig = stop_signal();
  if (sig != 0) throw Interrupted(sig, what + ": stopped by " + signal_name(sig) + detail);
}

}  // namespace moe
