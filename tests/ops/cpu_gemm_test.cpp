// The CPU GEMM backends (ops/cpu_gemm.h): sgemm of each backend against a double-precision loop for every
// transposition, alpha/beta and odd sizes; with oneDNN a GEMM split into row or column blocks equal to the whole
// call (the ops' thread split); the int8 product exact against an integer loop; the default choice; stop signals
// arriving during GEMMs harmless (common/signal_stack.h).
#include "ops/cpu_gemm.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <random>
#include <vector>

#include "common/stop_signal.h"
#include "ops/cpu_isa.h"
#include "support/gemm_backends.h"

using namespace moe;

namespace {
template <class T>
std::vector<T> random_values(size_t n, uint32_t seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = T(std::lround(u(rng) * (std::is_integral_v<T> ? 1 : 1000)) / (std::is_integral_v<T> ? 1 : 1000.));
  return v;
}
}  // namespace

TEST_CASE("cpu_gemm: sgemm of every backend against a double loop", "[ops][cpu_gemm]") {
  test::RestoreGemmBackend restore;
  for (CpuGemmBackend backend : test::gemm_backends()) {
    set_cpu_gemm_backend(backend);
    for (auto [m, n, k] : {std::tuple{1, 1, 1}, {5, 37, 128}, {40, 8, 3}, {130, 515, 67}, {3, 1000, 256}, {1100, 9, 5}})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          INFO(enum_name(backend) << " m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb);
          const auto a = random_values<float>(size_t(m) * k, 1, -1, 1), b = random_values<float>(size_t(k) * n, 2, -1, 1);
          auto c = random_values<float>(size_t(m) * n, 3, -1, 1);
          const auto c0 = c;
          const float alpha = 0.5f, beta = 2.f;
          cpu::sgemm(ta, tb, m, n, k, alpha, a.data(), ta ? m : k, b.data(), tb ? k : n, beta, c.data(), n);
          double worst = 0;
          for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) {
              double s = 0;
              for (int p = 0; p < k; ++p) s += double(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
              worst = std::max(worst, std::abs(c[i * n + j] - (alpha * s + beta * c0[i * n + j])));
            }
          CHECK(worst <= 1e-6 * k + 1e-6);
        }
  }
}

// The ops split GEMMs over their threads by rows or columns of c (ops/matmul.cpp); with oneDNN each element
// comes out as from one call on the whole matrix, so results do not depend on the thread count. (Debian's
// OpenBLAS 0.3.21 does not give this: the last bits of some elements differ, tried in this test's first version.)
TEST_CASE("cpu_gemm: oneDNN split into blocks of rows or columns equals the whole call", "[ops][cpu_gemm]") {
  if (!onednn_built()) return;
  if (!__builtin_cpu_supports("avx512f")) {  // moe takes oneDNN only with AVX-512 (cpu_gemm.h), whose kernels
    WARN("this CPU has no AVX-512F: oneDNN's AVX2 kernels block differently and moe runs OpenBLAS here");
    return;
  }
  test::RestoreGemmBackend restore;
  set_cpu_gemm_backend(CpuGemmBackend::onednn);
  const int m = 96, n = 200, k = 160;
  const auto a = random_values<float>(m * k, 4, -1, 1), b = random_values<float>(k * n, 5, -1, 1);
  std::vector<float> whole(m * n);
  cpu::sgemm(false, false, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, whole.data(), n);
  for (int block : {1, 5, 36, 72}) {
    INFO("block " << block);
    std::vector<float> rows(m * n), cols(m * n);
    for (int r0 = 0; r0 < m; r0 += block)
      cpu::sgemm(false, false, std::min(block, m - r0), n, k, 1.f, a.data() + r0 * k, k, b.data(), n, 0.f,
                 rows.data() + r0 * n, n);
    CHECK(rows == whole);
    if (block == 1) continue;  // one column is oneDNN's gemv, summed in another order; the ops split >= 16 columns
    for (int c0 = 0; c0 < n; c0 += block)
      cpu::sgemm(false, false, m, std::min(block, n - c0), k, 1.f, a.data(), k, b.data() + c0, n, 0.f, cols.data() + c0, n);
    CHECK(cols == whole);
  }
}

// Every backend and every instruction set the CPU has (the AVX2 kernel, ops/int8_panels.cpp, ops/cpu_isa.h): sizes
// with tails of 8 in the columns and of 4 in the inner dimension, an odd inner dimension, and -128 in a; b within
// the AVX2 kernel's range [-64, 64] (its bounds included) and past it (the portable loop there).
TEST_CASE("cpu_gemm: the int8 product is exact", "[ops][cpu_gemm]") {
  test::RestoreGemmBackend restore;
  const CpuIsa saved = cpu_isa();
  for (CpuGemmBackend backend : test::gemm_backends())
    for (CpuIsa isa : {CpuIsa::portable, CpuIsa::avx2, CpuIsa::avx512}) {
      if (!cpu_supports(isa)) continue;
      set_cpu_gemm_backend(backend);
      set_cpu_isa(isa);
      for (auto [m, n, k] : {std::tuple{1, 1, 1}, {5, 37, 128}, {3, 48, 33}, {33, 300, 515}})
        for (bool tb : {false, true})
          for (int bmax : {64, 127}) {
            INFO(enum_name(backend) << " " << enum_name(isa) << " m " << m << " n " << n << " k " << k << " tb " << tb
                                    << " b in +-" << bmax);
            auto a = random_values<int8_t>(size_t(m) * k, 6, -127, 127);
            auto b = random_values<int8_t>(size_t(k) * n, 7, -bmax, bmax);
            a[0] = -128;
            b[0] = int8_t(bmax == 64 ? -64 : -128);
            b.back() = int8_t(bmax == 64 ? 64 : 127);
            CHECK(cpu::s8_panels_exact_for(b.data(), 1, int64_t(b.size()), 0) == (bmax == 64));
            std::vector<int32_t> c(size_t(m) * n, 99), want(size_t(m) * n, 0);
            cpu::gemm_s8s8s32(tb, m, n, k, a.data(), k, b.data(), tb ? k : n, c.data(), n);
            for (int i = 0; i < m; ++i)
              for (int j = 0; j < n; ++j)
                for (int p = 0; p < k; ++p)
                  want[i * n + j] += int32_t(a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
            CHECK(c == want);
          }
    }
  set_cpu_isa(saved);
}

TEST_CASE("cpu_gemm: oneDNN is the default on AVX-512, by rows on AVX2, where it is built", "[ops][cpu_gemm]") {
  if (std::getenv("MOE_CPU_GEMM")) return;  // the user's choice
  const CpuGemmBackend want = !onednn_built()                     ? CpuGemmBackend::openblas
                              : __builtin_cpu_supports("avx512f") ? CpuGemmBackend::onednn
                              : __builtin_cpu_supports("avx2")    ? CpuGemmBackend::by_rows
                                                                  : CpuGemmBackend::openblas;
  CHECK(cpu_gemm_backend() == want);
  if (!onednn_built())
    for (CpuGemmBackend b : {CpuGemmBackend::onednn, CpuGemmBackend::by_rows})
      CHECK_THROWS_WITH(set_cpu_gemm_backend(b), Catch::Contains("without oneDNN"));
}

// by_rows: decoding's GEMMs (at most 1,024 rows, a untransposed) to oneDNN; larger ones and the weight gradients
// x^T dy (a transposed), which oneDNN's AVX2 kernels ran 1.3-2.2x slower than OpenBLAS's, to OpenBLAS.
TEST_CASE("cpu_gemm: by rows, oneDNN takes the small untransposed products", "[ops][cpu_gemm]") {
  CHECK(by_rows_takes_onednn(false, 1));
  CHECK(by_rows_takes_onednn(false, kOnednnRows));
  CHECK_FALSE(by_rows_takes_onednn(false, kOnednnRows + 1));
  CHECK_FALSE(by_rows_takes_onednn(true, 256));
}

// oneDNN 2.6's JIT f32 GEMM points rsp into a heap workspace while it runs; a signal handler's frame pushed
// there corrupted malloc's bookkeeping (moe-train aborted on Ctrl-C: "corrupted size vs. prev_size"). The stop
// handlers run on an alternate stack (common/signal_stack.h). A child process runs GEMMs of the shapes that
// failed while this process sends it SIGUSR1 (a stop signal) every 0.3 ms; before the fix it aborted within
// 0.25 s or hung on every try.
TEST_CASE("cpu_gemm: a stop signal in the middle of GEMMs leaves the heap and the results intact", "[ops][cpu_gemm]") {
  test::RestoreGemmBackend restore;
  if (onednn_built()) set_cpu_gemm_backend(CpuGemmBackend::onednn);
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    install_stop_handlers("test");
    const int64_t m = 300, n = 8192, k = 256;
    std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
    std::vector<int8_t> a8(m * k, 3), b8(k * n, -2);
    std::vector<int32_t> c8(m * n);
    (void)!::write(ready[1], "r", 1);
    for (int i = 0; i < 60; ++i) {
      std::vector<char> churn(1000 + 97 * i);  // malloc at work between the calls, as in training
      const bool tb = i % 2;
      cpu::sgemm(false, tb, m, n, k, 1.f, a.data(), k, b.data(), tb ? k : n, 0.f, c.data(), n);
      if (c[0] != 32.f || c[m * n - 1] != 32.f) ::_exit(2);
      if (i % 4 == 0) {
        cpu::gemm_s8s8s32(tb, m, n, k, a8.data(), k, b8.data(), tb ? k : n, c8.data(), n);
        if (c8[0] != -6 * k || c8[m * n - 1] != -6 * k) ::_exit(3);
      }
    }
    ::_exit(stop_signal() == SIGUSR1 ? 0 : 4);
  }
  REQUIRE(pid > 0);
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);  // the child's handlers are installed
  ::close(ready[0]);
  ::close(ready[1]);
  int status = 0, sent = 0;
  bool hung = false;  // a corrupted heap can also leave malloc spinning or waiting forever
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      hung = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    if (::kill(pid, SIGUSR1) == 0) ++sent;
    ::usleep(300);
  }
  INFO("signals sent: " << sent << "; the child " << (WIFSIGNALED(status) ? "died of signal " : "exited with ")
                        << (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)));
  CHECK_FALSE(hung);
  CHECK(sent > 100);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}
