// signal_stack.h implementation: a thread_local owner of the stack, installed by sigaltstack(2) and
// disabled again before it is freed at thread exit. Covered by tests/ops/cpu_gemm_test.cpp.
#include "common/signal_stack.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

namespace moe {

namespace {
class ThreadSignalStack {
 public:
  ThreadSignalStack() {
    stack_t current{};
    if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_DISABLE)) return;  // the thread has one
    // 64 KiB, or four times the kernel's minimum where the CPU's register state (AVX-512, AMX) needs more.
    const size_t size = std::max<size_t>(size_t(64) << 10, 4 * size_t(std::max(0L, sysconf(_SC_MINSIGSTKSZ))));
    memory_.reset(new char[size]);
    stack_t ss{};
    ss.ss_sp = memory_.get();
    ss.ss_size = size;
    if (sigaltstack(&ss, nullptr) != 0) memory_.reset();  // then handlers run on the thread's stack, as before
  }
  ~ThreadSignalStack() {
    if (!memory_) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
  }
  ThreadSignalStack(const ThreadSignalStack&) = delete;
  ThreadSignalStack& operator=(const ThreadSignalStack&) = delete;

 private:
  std::unique_ptr<char[]> memory_;
};
}  // namespace

void use_signal_stack() { thread_local ThreadSignalStack stack; }

}  // namespace moe
