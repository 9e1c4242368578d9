// CUDA emulator: the kernel registry. Every __global__ instantiation compiled into the program
// registers at start-up (launch.h's KernelSite, one per kernel body) and marks itself launched at its
// first entry; kernel_coverage() lists them for the "never launched" check of tests/gpu. The entry
// also checks the launch against the kernel's __launch_bounds__, which a GPU refuses to exceed.
// Covered by tests/gpu (coverage) and tests/emu/checker_test.cpp (launch bounds).
#include <algorithm>
#include <memory>

#include "moe_emu/control.h"
#include "state.h"

namespace moe_emu {
namespace {
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::unique_ptr<KernelRecord>>& registry() {
  static std::vector<std::unique_ptr<KernelRecord>> r;
  return r;
}
}  // namespace

KernelRecord* register_kernel(const char* tag_type_name) {
  auto k = std::make_unique<KernelRecord>();
  k->name = kernel_display_name(tag_type_name);
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().push_back(std::move(k));
  return registry().back().get();
}

void kernel_entry(KernelRecord* const* kernel, unsigned launch_bound) {
  ThreadState& t = current_thread();
  Launch& L = *t.worker->launch;
  if (t.tid != 0) return;
  L.kernel.store(*kernel, std::memory_order_relaxed);
  if (launch_bound && L.threads_per_block > launch_bound)
    report(t, ReportKind::launch_bound, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
           "launched with " + std::to_string(L.threads_per_block) + " threads per block, above its __launch_bounds__(" +
               std::to_string(launch_bound) + "): a GPU refuses the launch (too many resources requested)",
           true);
}

std::vector<KernelCoverage> kernel_coverage() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<KernelCoverage> out;
  for (const auto& k : registry()) out.push_back(KernelCoverage{k->name, k->launched.load(), k->max_threads.load()});
  std::sort(out.begin(), out.end(), [](const KernelCoverage& a, const KernelCoverage& b) { return a.name < b.name; });
  return out;
}

}  // namespace moe_emu
