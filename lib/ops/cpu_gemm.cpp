// cpu_gemm.h: the backend choice and the calls into OpenBLAS, oneDNN and the int8 products (AVX2 panels, portable); in
// a CUDA emulator build also the GEMM of the emulated cuBLAS and cuBLASLt.
#include "ops/cpu_gemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "common/error.h"
#include "common/openblas_core.h"
#include "common/signal_stack.h"
#include "ops/cpu_isa.h"
#include "tensor/out_of_memory.h"

#ifdef MOE_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef MOE_CUDA_EMU
#include "moe_emu/control.h"
#endif

namespace moe {

bool onednn_built() {
#ifdef MOE_WITH_DNNL
  return true;
#else
  return false;
#endif
}

namespace {
CpuGemmBackend default_backend() {
  if (const char* v = std::getenv("MOE_CPU_GEMM"); v && *v) {
    const CpuGemmBackend b = parse_enum<CpuGemmBackend>(v, "MOE_CPU_GEMM");
    MOE_CHECK(b == CpuGemmBackend::openblas || onednn_built(), "MOE_CPU_GEMM=", v,
              ": this build of moe has no oneDNN (install libdnnl-dev and rebuild)");
    return b;
  }
  if (!onednn_built()) return CpuGemmBackend::openblas;
  return __builtin_cpu_supports("avx512f") ? CpuGemmBackend::onednn
         : __builtin_cpu_supports("avx2")  ? CpuGemmBackend::by_rows
                                           : CpuGemmBackend::openblas;
}
std::atomic<CpuGemmBackend>& backend_slot() {
  static std::atomic<CpuGemmBackend> b{default_backend()};
  return b;
}
CBLAS_TRANSPOSE blas_trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

/// While alive, oneDNN (an OpenMP library) called on this thread uses one thread: inside a parallel_for
/// (common/cpu_threads.h) it sees an active region and runs serially anyway; outside one, this thread's
/// OpenMP thread count is 1 until the scope ends. GEMMs are split by the ops, never by the library.
class OneOpenmpThread {
 public:
  OneOpenmpThread() : saved_(omp_in_parallel() ? 0 : omp_get_max_threads()) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~OneOpenmpThread() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  OneOpenmpThread(const OneOpenmpThread&) = delete;
  OneOpenmpThread& operator=(const OneOpenmpThread&) = delete;

 private:
  int saved_;
};
}  // namespace

#ifdef MOE_WITH_DNNL
namespace {
/// A failed oneDNN call: out of memory for its packing buffers (an address-space limit) is the allocator's
/// out-of-memory error, so that training names the op and the keys to lower; anything else an error.
void check_dnnl(dnnl_status_t s, const char* call, int64_t m, int64_t n, int64_t k) {
  if (s == dnnl_out_of_memory)
    throw_out_of_memory(Device::cpu(), "a request for oneDNN " + std::string(call) + "'s packing buffers (an m " +
                                           std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k) +
                                           " GEMM)");
  MOE_CHECK(s == dnnl_success, "oneDNN ", call, " failed (status ", int(s), ") on m ", m, ", n ", n, ", k ", k);
}
}  // namespace
#endif

CpuGemmBackend cpu_gemm_backend() { return backend_slot().load(std::memory_order_relaxed); }

void set_cpu_gemm_backend(CpuGemmBackend backend) {
  MOE_CHECK(backend == CpuGemmBackend::openblas || onednn_built(), "CPU GEMM backend ", enum_name(backend),
            ": moe was built without oneDNN");
  backend_slot().store(backend);
}

CpuComputeInfo cpu_compute_info() {
  CpuComputeInfo info{"", cpu_isa(), cpu_gemm_backend(), openblas_core(), ""};
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; info.cpu.empty() && std::getline(cpuinfo, line);)
    if (const size_t colon = line.find(':'); line.rfind("model name", 0) == 0 && colon != std::string::npos)
      if (const size_t at = line.find_first_not_of(" \t", colon + 1); at != std::string::npos)
        info.cpu = line.substr(at);
  if (const char* v = std::getenv("OPENBLAS_CORETYPE")) info.openblas_coretype = v;
  return info;
}

std::string describe(const CpuComputeInfo& info) {
  return (info.cpu.empty() ? "an unnamed CPU" : info.cpu) + ": " + enum_name(info.kernels) + " kernels, f32 GEMMs " +
         enum_name(info.gemm) + ", OpenBLAS " + info.openblas +
         (info.openblas_coretype.empty() ? "" : " (OPENBLAS_CORETYPE=" + info.openblas_coretype + ")");
}

namespace cpu {
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
#ifdef MOE_WITH_DNNL
  const CpuGemmBackend backend = cpu_gemm_backend();
  if (backend == CpuGemmBackend::onednn || (backend == CpuGemmBackend::by_rows && by_rows_takes_onednn(ta, m))) {
    OneOpenmpThread one;
    use_signal_stack();  // a signal during the call must not land on oneDNN's workspace (signal_stack.h)
    const dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    check_dnnl(s, "sgemm", m, n, k);
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, blas_trans(ta), blas_trans(tb), int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
              beta, c, int(ldc));
}

#ifdef MOE_CUDA_EMU
// The CUDA emulator's cuBLAS and cuBLASLt run their GEMMs here too (moe_emu::set_host_sgemm).
[[maybe_unused]] const bool emulated_blas_registered = (moe_emu::set_host_sgemm(&sgemm), true);
#endif

void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
           const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, blas_trans(ta), blas_trans(tb), int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
              beta, c, int(ldc));
}

bool s8_panels_run() {
  // oneDNN's s8s8s32 is exact with AVX-512 VNNI; without it (AVX2) it sums pairs in saturating 16 bits.
  static const bool vnni = __builtin_cpu_supports("avx512vnni");
  const bool onednn_exact = onednn_built() && cpu_gemm_backend() == CpuGemmBackend::onednn && vnni;
  return cpu_isa() != CpuIsa::portable && !onednn_exact;
}

void gemm_s8s8s32(bool tb, int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b,
                  int64_t ldb, int32_t* c, int64_t ldc) {
  if (s8_panels_run() && s8_panels_exact_for(b, tb ? n : k, tb ? k : n, ldb)) {
    // AVX2: b packed for this call (a model's weights are packed once: ops/int8_gemm.h)
    const int64_t width = s8_quads_width(k);
    std::vector<int8_t> panels(static_cast<size_t>(s8_panels_bytes(k, n)));
    pack_s8_panels(tb, k, n, b, ldb, panels.data());
    std::vector<uint8_t> quads(static_cast<size_t>(m * width));
    s8_to_u8_quads(m, k, a, lda, quads.data());
    gemm_s8_panels(m, n, k, quads.data(), width, panels.data(), 0, (n + 7) / 8, c, ldc);
    return;
  }
#ifdef MOE_WITH_DNNL
  if (!s8_panels_run() && cpu_isa() != CpuIsa::portable) {  // oneDNN with AVX-512 VNNI: exact
    OneOpenmpThread one;
    use_signal_stack();
    const int32_t no_offset = 0;
    const dnnl_status_t s = dnnl_gemm_s8s8s32('N', tb ? 'T' : 'N', 'F', m, n, k, 1.f, a, lda, 0, b, ldb, 0, 0.f, c,
                                              ldc, &no_offset);
    check_dnnl(s, "gemm_s8s8s32", m, n, k);
    return;
  }
#endif
  for (int64_t i = 0; i < m; ++i) {  // the portable loop (and AVX2's for b past [-64, 64]): one row of c at a time
    const int8_t* ai = a + i * lda;
    int32_t* ci = c + i * ldc;
    if (tb) {  // c_ij = a_i . b_j (rows of b contiguous)
      for (int64_t j = 0; j < n; ++j) {
        int32_t s = 0;
        for (int64_t p = 0; p < k; ++p) s += int32_t(ai[p]) * b[j * ldb + p];
        ci[j] = s;
      }
      continue;
    }
    for (int64_t j = 0; j < n; ++j) ci[j] = 0;
    for (int64_t p = 0; p < k; ++p)  // c_i += a_ip b_p (rows of b streamed)
      for (int64_t j = 0; j < n; ++j) ci[j] += int32_t(ai[p]) * b[p * ldb + j];
  }
}
}  // namespace cpu

}  // namespace moe
