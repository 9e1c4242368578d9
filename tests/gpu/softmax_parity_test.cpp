// CPU-vs-CUDA parity of softmax / log-softmax (f32, bf16 and f16): warp rows (<= 1024) and block rows,
// packed (aligned) and scalar paths, full masks with a fully masked row and broadcast row masks.
// Masked log-softmax outputs (-inf) are mapped to 0 by a test node before comparison, after
// checking that CPU and GPU put -inf in exactly the same places.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "graph/expr/softmax.h"
#include "support/parity.h"

using namespace moe;

namespace {
Tensor random_mask(const Shape& s, uint32_t seed, bool kill_row) {
  std::mt19937 rng(seed);
  std::vector<int32_t> v(static_cast<size_t>(s.numel()));
  for (auto& e : v) e = rng() % 4 != 0;
  if (kill_row && s.ndim() == 2 && s[0] > 1)
    for (int64_t j = 0; j < s[1]; ++j) v[static_cast<size_t>(s[1] + j)] = 0;
  Tensor t = Tensor::empty(s, DType::u8, Device::cpu());
  for (size_t i = 0; i < v.size(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
  return t;
}
// -inf -> 0, gradient passed through the finite entries (device-agnostic, via the host).
Expr finite(const Expr& x) {
  return x.graph().add(
      "finite", x.shape(), x.dtype(), {x},
      [](Node& n) {
        std::vector<double> v = n.in(0).to_vector<double>();
        for (double& e : v) e = std::isinf(e) ? 0 : e;
        n.val = Tensor::from_vector(v, n.shape, n.graph->device(), n.dtype);
      },
      [](Node& n) {
        std::vector<double> v = n.in(0).to_vector<double>(), g = n.grad.to_vector<double>();
        std::vector<double> d = n.grad_of(0).to_vector<double>();
        for (size_t i = 0; i < v.size(); ++i) d[i] += std::isinf(v[i]) ? 0 : g[i];
        n.grad_of(0).copy_from(Tensor::from_vector(d, n.shape, n.graph->device(), n.dtype));
      });
}
}  // namespace

TEST_CASE("softmax parity", "[gpu][softmax]") {
  for (const Shape& shape : {Shape{33, 257}, Shape{16, 1024}, Shape{3, 1}, Shape{4, 5000}, Shape{3, 32001}}) {
    Tensor x = test::random_tensor(shape, 41, -6, 6);
    const Shape row{1, shape.last()};
    for (Tensor mask : {Tensor(), random_mask(shape, 5, true), random_mask(row, 6, false)}) {
      for (DType dt : test::kFloatTypes) {
        for (bool log : {false, true}) {
          INFO(shape << " mask " << (mask.defined() ? mask.shape().str() : "none") << " " << dtype_name(dt) << " log "
                     << log);
          auto build = [mask, log](Graph& g, const std::vector<Expr>& in) {
            Tensor m = mask.defined() ? mask.to(g.device()) : mask;
            return log ? finite(log_softmax(in[0], m)) : softmax(in[0], m);
          };
          auto r = test::parity({x}, build, dt, {0});
          CHECK(r.forward < test::bar(dt, 1e-5, 2e-2));
          CHECK(r.backward < test::bar(dt, 1e-5, 2e-2));
        }
      }
      if (!mask.defined()) continue;
      // -inf positions agree exactly.
      Tensor yc = Tensor::empty(shape, DType::f64, Device::cpu());
      softmax_forward(x, mask, yc, true);
      Tensor xg = Tensor::from_vector(x.to_vector<double>(), shape, Device::cuda(0), DType::f32);
      Tensor yg = Tensor::empty(shape, DType::f32, Device::cuda(0));
      softmax_forward(xg, mask.to(Device::cuda(0)), yg, true);
      const auto a = yc.to_vector<double>(), b = yg.to_vector<double>();
      int mismatches = 0;
      for (size_t i = 0; i < a.size(); ++i) mismatches += std::isinf(a[i]) != std::isinf(b[i]) || std::isnan(b[i]);
      CHECK(mismatches == 0);
    }
  }
}
