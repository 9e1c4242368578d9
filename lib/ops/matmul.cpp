// CPU reference of the dense GEMMs (ops/cpu_gemm.h: oneDNN or OpenBLAS, a loop over the batch), the shape
// planning shared with CUDA, and the public entry points. See matmul.h for the math.
#include "ops/matmul.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "common/cpu_threads.h"
#include "ops/cpu_gemm.h"
#include "ops/dispatch.h"
#include "ops/int8_gemm.h"
#include "ops/transposed_weights.h"
#include "tensor/cuda_runtime.h"

namespace moe {

namespace {
int64_t lead_product(const Shape& s) {
  int64_t p = 1;
  for (int i = 0; i + 2 < s.ndim(); ++i) p *= s[i];
  return p;
}
Shape with_last_two(const Shape& lead, int64_t m, int64_t n) {
  std::vector<int64_t> d = lead.vec();
  d.resize(d.size() - 2);
  d.push_back(m);
  d.push_back(n);
  return Shape(d);
}
}  // namespace

MatmulPlan matmul_plan(const Shape& a, const Shape& b, bool trans_a, bool trans_b, const char* op) {
  const char* ta = trans_a ? "^T" : "";
  const char* tb = trans_b ? "^T" : "";
  MOE_CHECK(a.ndim() >= 2 && b.ndim() >= 2, op, ": operands need at least 2 axes, got ", a, ta, " @ ", b, tb);
  const int64_t am = trans_a ? a[-1] : a[-2], ak = trans_a ? a[-2] : a[-1];
  const int64_t bk = trans_b ? b[-1] : b[-2], bn = trans_b ? b[-2] : b[-1];
  MOE_CHECK(ak == bk, op, ": inner sizes differ (", ak, " vs ", bk, ") in ", a, ta, " @ ", b, tb);
  MatmulPlan p;
  p.k = ak;
  p.n = bn;
  p.m = am;
  if (b.ndim() == 2 && (a.ndim() == 2 || !trans_a)) {  // rows of a (any leading axes) times one matrix
    p.m = lead_product(a) * am;                        // not a.rows() = numel / last, which is 0 when k = 0
    p.out = a.ndim() == 2 ? Shape{am, bn} : a.with(-1, bn);
    p.stride_a = p.m * p.k;
    p.stride_b = p.k * p.n;
  } else if (b.ndim() == 2) {  // batched a^T, shared b
    p.batch = lead_product(a);
    p.stride_a = am * ak;
    p.out = with_last_two(a, am, bn);
  } else if (a.ndim() == 2) {  // shared a, batched b
    p.batch = lead_product(b);
    p.stride_b = bk * bn;
    p.out = with_last_two(b, am, bn);
  } else {
    bool same = a.ndim() == b.ndim();
    for (int i = 0; same && i + 2 < a.ndim(); ++i) same = a[i] == b[i];
    MOE_CHECK(same, op, ": batch axes differ in ", a, ta, " @ ", b, tb);
    p.batch = lead_product(a);
    p.stride_a = am * ak;
    p.stride_b = bk * bn;
    p.out = with_last_two(a, am, bn);
  }
  p.stride_c = p.m * p.n;
  return p;
}

namespace {
bool tf32_from_env() {
  const char* v = std::getenv("MOE_ALLOW_TF32");
  return v && v[0] == '1';
}
bool g_allow_tf32 = tf32_from_env();
}  // namespace
bool allow_tf32() { return g_allow_tf32; }
void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }

double bench_gemm_tflops(const std::function<void()>& fn, double flops, Device device, int iters) {
  auto sync = [&] {
    if (device.is_cuda()) cuda::synchronize(device.index);
  };
  fn();
  sync();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) fn();
  sync();
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return flops * iters / std::max(sec, 1e-12) / 1e12;
}

namespace cpu {
namespace {
void blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const double* a, int64_t lda, const double* b,
          int64_t ldb, float beta, double* c, int64_t ldc) {
  dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/// c = alpha op(a) op(b) + beta c, split across the CPU threads (common/cpu_threads.h) along the
/// longer of m and n: each part is one single-threaded GEMM call on a block of rows (or columns)
/// of c; with oneDNN every element is computed as by one call on the whole matrix, so results do not depend
/// on the thread count (tests/ops/cpu_gemm_test.cpp; Debian's OpenBLAS differs in the last bits).
template <class T>
void gemm(const T* a, const T* b, T* c, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
          bool split) {
  const int64_t lda = std::max<int64_t>(1, ta ? m : k), ldb = std::max<int64_t>(1, tb ? k : n),
                ldc = std::max<int64_t>(1, n);
  if (!split) return blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  // Below 2^20 FLOPs per thread a fork costs more than it saves, unless b is larger than a core's L2 cache: then a
  // product of a few rows (the last steps of greedy decoding) streams b from memory, and two threads stream their
  // halves in about half the time (docs/PERF.md, "Greedy decoding at two cores").
  const int64_t min_flops = int64_t(sizeof(T)) * n * k > (int64_t(1) << 19) ? int64_t(1) << 17 : int64_t(1) << 20;
  if (m >= n) {
    const int64_t rows = std::max<int64_t>(4, min_flops / std::max<int64_t>(1, 2 * n * k));
    parallel_for(m, rows, [&](int64_t lo, int64_t hi) {
      blas(ta, tb, hi - lo, n, k, alpha, ta ? a + lo : a + lo * lda, lda, b, ldb, beta, c + lo * ldc, ldc);
    });
  } else {
    const int64_t cols = std::max<int64_t>(16, min_flops / std::max<int64_t>(1, 2 * m * k));
    parallel_for(n, cols, [&](int64_t lo, int64_t hi) {
      blas(ta, tb, m, hi - lo, k, alpha, a, lda, tb ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
    });
  }
}

template <class T>
void matmul(const Tensor& a, const Tensor& b, Tensor& out, bool ta, bool tb, float alpha, float beta) {
  const MatmulPlan p = matmul_plan(a.shape(), b.shape(), ta, tb);
  if (p.m == 0 || p.n == 0) return;
  const T *pa = a.data<T>(), *pb = b.data<T>();
  T* pc = out.data<T>();
  if constexpr (std::is_same_v<T, float>) {  // a quantized weight as b (ops/int8_gemm.h): rows of a times it
    const Int8Matrix* q = active_int8_weight(b);
    if (q && q->experts() == 1 && q->per_row == tb && p.batch == 1 && !ta && alpha == 1.f && beta == 0.f)
      return int8_matmul(pa, p.m, *q, 0, pc, false);
    if (const Tensor* t = active_transposed_weight(b)) {  // W held as Wt (ops/transposed_weights.h): op(W) = Wt^T
      pb = t->data<float>();
      tb = !tb;
    }
  }
  auto one = [&](int64_t i, bool split) {
    T* c = pc + i * p.stride_c;
    if (p.k == 0) {  // empty reduction: out = beta * out
      for (int64_t j = 0; j < p.stride_c; ++j) c[j] = beta == 0 ? T(0) : T(beta) * c[j];
      return;
    }
    gemm(pa + i * p.stride_a, pb + i * p.stride_b, c, ta, tb, p.m, p.n, p.k, alpha, beta, split);
  };
  if (p.batch == 1) return one(0, true);
  // a batch: one matrix per thread at a time (each call single-threaded)
  const int64_t per =
      std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(1, 2 * p.m * p.n * std::max<int64_t>(1, p.k)));
  parallel_for(p.batch, per, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) one(i, false);
  });
}

template <class T>
void add_bias(const Tensor& bias, Tensor& out) {
  const T* pb = bias.data<T>();
  T* po = out.data<T>();
  const int64_t n = bias.numel(), rows = n ? out.numel() / n : 0;
  parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n)), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      for (int64_t j = 0; j < n; ++j) po[i * n + j] += pb[j];
  });
}

/// Column sums of dout [rows, n] added to dbias: the threads take blocks of columns, each streams
/// the rows once (contiguous, vectorised) into its own sums; every column is summed in row order.
template <class T>
void bias_grad_t(const Tensor& dout, Tensor& dbias) {
  const T* pd = dout.data<T>();
  T* pb = dbias.data<T>();
  const int64_t n = dbias.numel(), rows = n ? dout.numel() / n : 0;
  const int64_t min_cols = std::max<int64_t>(16, 16384 / std::max<int64_t>(1, rows));
  parallel_for(n, min_cols, [&](int64_t lo, int64_t hi) {
    constexpr int64_t kBlock = 256;  // columns summed at once: their sums stay in registers / L1
    T sums[kBlock];
    for (int64_t c0 = lo; c0 < hi; c0 += kBlock) {
      const int64_t w = std::min(kBlock, hi - c0);
      for (int64_t j = 0; j < w; ++j) sums[j] = 0;
      for (int64_t i = 0; i < rows; ++i) {
        const T* r = pd + i * n + c0;
        for (int64_t j = 0; j < w; ++j) sums[j] += r[j];
      }
      for (int64_t j = 0; j < w; ++j) pb[c0 + j] += sums[j];
    }
  });
}
}  // namespace

void matmul_forward(const Tensor& a, const Tensor& b, Tensor& out, bool ta, bool tb, float alpha, float beta) {
  check_cpu_float("matmul", a);
  if (a.dtype() == DType::f64)
    matmul<double>(a, b, out, ta, tb, alpha, beta);
  else
    matmul<float>(a, b, out, ta, tb, alpha, beta);
}

void linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out) {
  cpu::matmul_forward(x, w, out, false, false, 1.f, 0.f);
  if (!bias.defined()) return;
  if (x.dtype() == DType::f64)
    add_bias<double>(bias, out);
  else
    add_bias<float>(bias, out);
}

void bias_grad(const Tensor& dout, Tensor& dbias) {
  check_cpu_float("bias_grad", dout);
  if (dout.dtype() == DType::f64)
    bias_grad_t<double>(dout, dbias);
  else
    bias_grad_t<float>(dout, dbias);
}
}  // namespace cpu

void matmul_forward(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b, float alpha,
                    float beta) {
  const MatmulPlan p = matmul_plan(a.shape(), b.shape(), trans_a, trans_b);
  check_same_device("matmul", a, b, out);
  check_dtype("matmul", "b", b, a.dtype());
  check_dtype("matmul", "output", out, a.dtype());
  check_shape("matmul", "output", out, p.out);
  MOE_DISPATCH(a, matmul_forward, a, b, out, trans_a, trans_b, alpha, beta);
}

void linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out) {
  MOE_CHECK(w.shape().ndim() == 2, "linear: weight must be [in, out], got ", w.shape());
  const MatmulPlan p = matmul_plan(x.shape(), w.shape(), false, false, "linear");
  check_same_device("linear", x, w, bias, out);
  check_dtype("linear", "weight", w, x.dtype());
  check_dtype("linear", "output", out, x.dtype());
  check_shape("linear", "output", out, p.out);
  if (bias.defined()) {
    check_dtype("linear", "bias", bias, x.dtype());
    check_shape("linear", "bias", bias, Shape{w.shape()[1]});
  }
  MOE_DISPATCH(x, linear_forward, x, w, bias, out);
}

void bias_grad(const Tensor& dout, Tensor& dbias) {
  check_same_device("bias_grad", dout, dbias);
  check_dtype("bias_grad", "bias gradient", dbias, dout.dtype());
  MOE_CHECK(dbias.shape().ndim() == 1 && dout.shape().ndim() >= 1 && dout.shape().last() == dbias.numel(),
            "bias_grad: output gradient ", dout.shape(), " does not match bias ", dbias.shape());
  MOE_DISPATCH(dout, bias_grad, dout, dbias);
}

}  // namespace moe
