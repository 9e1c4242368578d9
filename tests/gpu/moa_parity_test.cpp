// CPU-vs-CUDA parity of the MoA sublayer (lib/layers/moa.h), f32 and bf16, forward and gradients:
// the dense path (k = E), the grouped sparse path with padded queries (encoder self-attention),
// causal decoder self-attention and cross-attention. The router input is steered so that the
// top-k choice has clear margins and bf16 rounding cannot change which experts are picked. The hidden
// [.bench] case prints the forward+backward time of one sublayer at WMT shapes (dense vs grouped).
#include <catch2/catch.hpp>
#include <cstdio>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "layers/moa.h"
#include "support/parity.h"
#include "tensor/cuda_runtime.h"

using namespace moe;

namespace {
/// x [B, T, d] whose first E features hold a per-token permutation of 0, 2/E, ..., 2(E-1)/E (exact in
/// bf16 for E a power of two), and a router reading only those features (3 x identity): logits differ
/// by at least 6/E between experts.
std::pair<Tensor, Tensor> steered(int64_t b, int64_t t, int64_t d, int e, uint32_t seed) {
  std::vector<double> x = test::random_tensor(Shape{b, t, d}, seed).to_vector<double>();
  for (int64_t r = 0; r < b * t; ++r)
    for (int i = 0; i < e; ++i) x[static_cast<size_t>(r * d + i)] = 2.0 * ((r * 3 + i * 5) % e) / e;
  std::vector<double> w(static_cast<size_t>(d * e), 0.0);
  for (int i = 0; i < e; ++i) w[static_cast<size_t>(i * e + i)] = 3.0;
  return {Tensor::from_vector(x, Shape{b, t, d}), Tensor::from_vector(w, Shape{d, int64_t{e}})};
}
}  // namespace

TEST_CASE("moa parity", "[gpu][moa]") {
  struct Case {
    int k, e;
    int64_t dd;
    const char* site;  // encoder | decoder | cross
  };
  const Case cases[] = {{4, 4, 32, "encoder"}, {2, 8, 64, "encoder"}, {3, 8, 128, "decoder"}, {2, 4, 40, "cross"}};
  const int64_t b = 3, t = 19, s = 23, d = 48;
  uint32_t seed = 100;
  for (const Case& c : cases) {
    MoaOptions o;
    o.k = c.k;
    o.experts = c.e;
    o.head_dim = c.dd;
    auto [x, router] = steered(b, t, d, c.e, seed++);
    Tensor mem = test::random_tensor(Shape{b, s, d}, seed++);
    std::vector<uint8_t> qm(static_cast<size_t>(b * t), 1), km(static_cast<size_t>(b * s), 1);
    for (int64_t i = 15; i < t; ++i) qm[static_cast<size_t>(t + i)] = 0;  // second sequence padded
    for (int64_t i = 10; i < s; ++i) km[static_cast<size_t>(2 * s + i)] = 0;
    const Tensor qpad = Tensor::from_vector(qm, Shape{b, t}), kpad = Tensor::from_vector(km, Shape{b, s});
    const Tensor wq = test::random_tensor(Shape{c.e, d, c.dd}, seed++, -0.3, 0.3);
    const Tensor wo = test::random_tensor(Shape{c.e, c.dd, d}, seed++, -0.3, 0.3);
    const Tensor wk = test::random_tensor(Shape{d, c.dd}, seed++, -0.3, 0.3);
    const Tensor wv = test::random_tensor(Shape{d, c.dd}, seed++, -0.3, 0.3);
    const std::string site = c.site;
    for (DType dt : {DType::f32, DType::bf16}) {
      INFO(o.name() << " " << site << " " << dtype_name(dt));
      auto r = test::parity(
          {x, mem, router, wq, wo, wk, wv},
          [=](Graph&, const std::vector<Expr>& l) {
            const MoaWeights w{cast(l[2], DType::f32), l[3], l[4], l[5], l[6]};
            if (site == "encoder") return moa_attention({l[0], l[0], qpad, false, true, nullptr}, w, o, qpad).out;
            if (site == "decoder") return moa_attention({l[0], l[0], Tensor(), true, true, nullptr}, w, o).out;
            return moa_attention({l[0], l[1], kpad, false, false, nullptr}, w, o).out;
          },
          dt, site == "cross" ? std::vector<int>{0, 1, 2, 3, 4, 5, 6} : std::vector<int>{0, 2, 3, 4, 5, 6});
      CHECK(r.forward < (dt == DType::f32 ? 1e-4 : 2e-2));
      CHECK(r.backward < (dt == DType::f32 ? 1e-4 : 3e-2));
    }
  }
}

TEST_CASE("moa layer time at WMT shapes", "[.bench][gpu][moa]") {
  // Forward + backward of one encoder-like MoA sublayer, bf16, 64 sentences x 128 tokens, d 512:
  // the dense path and the grouped path at k = E (same math), and the big 16K32E256D configuration.
  const Device gpu = Device::cuda(0);
  const int64_t b = 64, t = 128, d = 512;
  struct Case {
    int k, e;
    int64_t dd;
    const char* dispatch;
  };
  for (const Case& c : {Case{8, 8, 128, "dense"}, Case{8, 8, 128, "sparse"}, Case{16, 32, 256, "sparse"}}) {
    MoaOptions o;
    o.k = c.k;
    o.experts = c.e;
    o.head_dim = c.dd;
    o.dispatch = parse_enum<MoaDispatch>(c.dispatch, "dispatch");
    const auto shapes = {Shape{b, t, d},      Shape{d, int64_t{c.e}}, Shape{c.e, d, c.dd},
                         Shape{c.e, c.dd, d}, Shape{d, c.dd},         Shape{d, c.dd}};
    std::vector<Tensor> in;
    uint32_t seed = 1;
    for (const Shape& s : shapes) {
      const DType dt = in.size() == 1 ? DType::f32 : DType::bf16;  // the router stays f32
      in.push_back(Tensor::from_vector(test::random_tensor(s, seed++, -0.1, 0.1).to_vector<float>(), s, gpu, dt));
    }
    auto step = [&] {
      Graph g(gpu, nullptr, GraphOptions{.training = true, .compute_dtype = DType::bf16});
      std::vector<Expr> l;
      for (const Tensor& x : in) l.push_back(g.input(x, true));
      MoaResult r = moa_attention({l[0], l[0], Tensor(), false, true, nullptr},
                                  MoaWeights{l[1], l[2], l[3], l[4], l[5]}, o, Tensor(), true);
      g.forward();
      g.backward_from(r.out, Tensor::zeros(r.out.shape(), r.out.dtype(), gpu));
    };
    step();
    const float ms = cuda::time_on_device_ms(0,
                                             [&] {
                                               for (int i = 0; i < 10; ++i) step();
                                             }) /
                     10;
    std::printf("moa %s %s: %.3f ms forward+backward for %lld tokens\n", o.name().c_str(), c.dispatch, ms,
                static_cast<long long>(b * t));
  }
}
