// A CUDA injection library (CUDA_INJECTION64_PATH=libmoe-kernel-trace.so) for scripts/gpu-check.sh:
// the driver loads it at cuInit and calls InitializeInjection, which subscribes to CUPTI's driver-API
// callbacks; every kernel launch (cuLaunchKernel, cuLaunchKernelEx, cooperative launches, their _ptsz
// forms: what the CUDA runtime, static or not, and cub call) adds its mangled name to a set, written
// at exit to $MOE_KERNEL_TRACE_OUT, one name per line. With the list of kernels compiled into a
// program (cuobjdump -symbols: STO_ENTRY), that gives the kernels a run never launched, on a GPU.
// Built by scripts/gpu-pack.sh against the CUPTI of the CUDA toolkit; nothing here runs without a GPU,
// so it is first run by gpu-check.sh on a lent GPU (docs/GPU-FIRST-RUN.md), which reports any failure
// to load it instead of a list.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace {
std::mutex g_mutex;
std::set<std::string>* g_names = new std::set<std::string>;  // never destroyed: written in an atexit handler
CUpti_SubscriberHandle g_subscriber;

bool is_launch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: return true;
    default: return false;
  }
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || !is_launch(id) || info->callbackSite != CUPTI_API_ENTER ||
      !info->symbolName)
    return;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_names->insert(info->symbolName);
}

void write_names() {
  const char* path = std::getenv("MOE_KERNEL_TRACE_OUT");
  std::FILE* f = path ? std::fopen(path, "w") : nullptr;
  if (!f) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const std::string& n : *g_names) std::fprintf(f, "%s\n", n.c_str());
  std::fclose(f);
}

void fail(const char* what, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "moe-kernel-trace: %s failed: %s\n", what, text ? text : "unknown CUPTI error");
}
}  // namespace

extern "C" int InitializeInjection() {
  CUptiResult r = cuptiSubscribe(&g_subscriber, on_callback, nullptr);
  if (r != CUPTI_SUCCESS) return fail("cuptiSubscribe", r), 0;
  r = cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  if (r != CUPTI_SUCCESS) return fail("cuptiEnableDomain", r), 0;
  std::atexit(write_names);
  return 1;
}
