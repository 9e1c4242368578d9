// CUDA emulator: guarding pinned destinations of queued copies (host_guard.h). A fixed table of guards
// (the signal handler reads it without locks: each slot is published through its atomic state) and
// a SIGSEGV handler installed, and reinstalled when something (Catch2's fatal-signal handler)
// replaced it, whenever a guard is set; faults it does not own go to the handler it replaced.
// Covered by tests/emu/stream_test.cpp.
#include "host_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "reports.h"

namespace moe_emu {
namespace {
enum State : int { kFree = 0, kActive = 1, kHit = 2, kOpened = 3 };
struct Guard {
  std::atomic<int> state{kFree};
  uintptr_t begin = 0, end = 0, page_begin = 0, page_end = 0, fault = 0, fault_pc = 0;
  uint32_t serial = 0;
  bool write = false;
  char what[200] = {};
};
constexpr int kGuards = 128;
Guard g_guards[kGuards];
std::mutex g_mutex;  // guard_pending / release_guard / take_guard_hits (never the handler)
struct sigaction g_previous {};

uintptr_t page_size() {
  static const uintptr_t p = uintptr_t(sysconf(_SC_PAGESIZE));
  return p;
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const auto a = reinterpret_cast<uintptr_t>(info->si_addr);
  bool ours = false;
  for (Guard& g : g_guards) {
    const int s = g.state.load(std::memory_order_acquire);
    if ((s != kActive) || a < g.page_begin || a >= g.page_end) continue;
    ours = true;
    if (a >= g.begin && a < g.end) {
      const auto* uc = static_cast<ucontext_t*>(context);
      g.fault = a;
      g.fault_pc = uintptr_t(uc->uc_mcontext.gregs[REG_RIP]) + 1;  // source_line reads return addresses
      g.write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
      g.state.store(kHit, std::memory_order_release);
    } else {
      g.state.store(kOpened, std::memory_order_release);  // the page's other bytes: stop guarding it
    }
    mprotect(reinterpret_cast<void*>(g.page_begin), g.page_end - g.page_begin, PROT_READ | PROT_WRITE);
  }
  if (ours) return;  // the access runs again, on the opened page
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) return g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    return g_previous.sa_handler(sig);
  }
  signal(sig, SIG_DFL);  // not ours and no handler: the access faults again and the default action ends us
}

void ensure_handler() {
  struct sigaction now {};
  sigaction(SIGSEGV, nullptr, &now);
  if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fault) return;
  struct sigaction mine {};
  mine.sa_sigaction = on_fault;
  mine.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&mine.sa_mask);
  sigaction(SIGSEGV, &mine, &g_previous);
}

/// Opens the pages of a guard unless another active guard still covers them.
void open_pages(const Guard& g) {
  for (uintptr_t p = g.page_begin; p < g.page_end; p += page_size()) {
    bool covered = false;
    for (const Guard& o : g_guards)
      covered |= &o != &g && o.state.load() == kActive && p >= o.page_begin && p < o.page_end;
    if (!covered) mprotect(reinterpret_cast<void*>(p), page_size(), PROT_READ | PROT_WRITE);
  }
}
}  // namespace

void guard_pending(uintptr_t addr, size_t bytes, uint32_t serial, const std::string& what) {
  if (!bytes) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Guard& g : g_guards) {
    if (g.state.load() != kFree) continue;
    g.begin = addr, g.end = addr + bytes, g.serial = serial, g.fault = 0, g.write = false;
    g.page_begin = addr / page_size() * page_size();
    g.page_end = (addr + bytes + page_size() - 1) / page_size() * page_size();
    std::snprintf(g.what, sizeof(g.what), "%s", what.c_str());
    ensure_handler();
    g.state.store(kActive, std::memory_order_release);
    mprotect(reinterpret_cast<void*>(g.page_begin), g.page_end - g.page_begin, PROT_NONE);
    return;
  }
  // All slots busy: this copy goes unguarded (its result is still correct once it runs).
}

void release_guard(uint32_t serial) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Guard& g : g_guards) {
    if (g.serial != serial || g.state.load() == kFree) continue;
    if (g.state.load() == kActive) {
      g.state.store(kOpened);
      open_pages(g);
    }
    if (g.state.load() == kOpened) g.state.store(kFree);  // a hit stays until take_guard_hits reports it
  }
}

std::string take_guard_hits() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::string first;
  for (Guard& g : g_guards) {
    if (g.state.load() != kHit) continue;
    char text[768];
    std::snprintf(text, sizeof(text),
                  "the host %s pinned memory %#lx at %s while %s, which writes it, had not run: synchronise its "
                  "stream (or an event recorded after it) before using the result",
                  g.write ? "wrote" : "read", static_cast<unsigned long>(g.fault), source_line(g.fault_pc).c_str(),
                  g.what);
    const std::string full = publish_api_report(ReportKind::host_access, text);
    if (first.empty()) first = full;
    g.state.store(kFree);
  }
  return first;
}

}  // namespace moe_emu
