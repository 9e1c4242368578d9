// CPU-vs-CUDA parity of fused attention (f32, bf16 and f16) for head sizes 32, 64, 128, 256 and an odd
// one (generic path), with and without causal/padding masks, Hk = 1 and Hk = H, both head_weight
// shapes, a fully padded sequence and Tq = 1 decoding, attention dropout (the same Philox masks on
// both devices, in every kernel: f32 and tensor cores, forward and backward), and on cuda:1 while
// cuda:0 is current (skipped without a GPU). bf16 and f16 run every kernel variant
// (ops/kernel_variants.h: wgmma, mma.sync and wmma; wgmma on the cases it takes: head sizes 64 and 128,
// no dropout), each forward with the backward of its family. The Hopper kernels' own case covers several
// 128-row query tiles, causal ones heaviest first, rows that see no key, key ranges that wrap the
// forward's 2- and 3-stage TMA rings, 64-row query tiles that wrap the backward's 2-stage ring over
// several 128-key blocks (and so several dQ arrivals per tile), a backward without dQ, and the table's
// fallback to mma.sync for calls they do not take. Tq = 1 and a decoding cache's row table run the decoding kernel
// (attention_decode.cu), split over the keys or not.
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <string>

#include "graph/expr/attention.h"
#include "ops/attention.h"
#include "ops/kernel_variants.h"
#include "support/kernel_variant.h"
#include "support/parity.h"
#include "tensor/device.h"

using namespace moe;

namespace {
struct Case {
  int64_t B, Tq, Tk, H, Hk, D;
  bool causal;
  int pad;     // 0 none, 1 a prefix of each row kept, 2 masks that are not prefixes (general padding)
  int weight;  // 0 none, 1 [B,H], 2 [B,Tq,H]
  float dropout = 0;
  bool dq = true;  // false: q takes no gradient (the backward computes no dQ)
};

/// Every forward variant of each dtype (each with its family's backward), or with every_variant false the
/// variant the table chooses itself.
void check_case(const Case& c, uint32_t seed, bool every_variant = true) {
  std::vector<Tensor> in{test::random_tensor(Shape{c.B, c.Tq, c.H, c.D}, seed, -2, 2),
                         test::random_tensor(Shape{c.B, c.Tk, c.Hk, c.D}, seed + 1, -2, 2),
                         test::random_tensor(Shape{c.B, c.Tk, c.Hk, c.D}, seed + 2, -1, 1)};
  if (c.weight == 1) in.push_back(test::random_tensor(Shape{c.B, c.H}, seed + 3, -1, 1));
  if (c.weight == 2) in.push_back(test::random_tensor(Shape{c.B, c.Tq, c.H}, seed + 3, -1, 1));
  Tensor pad;
  if (c.pad) {
    // 1: batch b keeps its first Tk - 5b keys; 2: batch 0 drops its first 3 keys, batch 1 every 7th key.
    // The last batch (when B > 2) is all padding.
    std::vector<int32_t> m(static_cast<size_t>(c.B * c.Tk), 0);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.Tk; ++j) {
        const bool keep = c.pad == 1 ? j < c.Tk - 5 * b : b == 0 ? j >= 3 : j % 7 != 3;
        m[static_cast<size_t>(b * c.Tk + j)] = b < 2 && keep ? 1 : 0;
      }
    pad = Tensor::from_vector(m, Shape{c.B, c.Tk}, Device::cpu(), DType::u8);
  }
  const float scale = 1.f / std::sqrt(static_cast<float>(c.D));
  std::vector<int> grads{1, 2};
  if (c.dq) grads.insert(grads.begin(), 0);
  if (c.weight) grads.push_back(3);
  for (DType dt : test::kFloatTypes) {
    std::vector<const KernelVariant*> fwds{nullptr};  // nullptr: the table's choice
    if (every_variant) fwds = kernel_variants(KernelOp::attention_forward, dt);
    for (const KernelVariant* fwd : fwds) {
      if (fwd && fwd->needs_tma && ((c.D != 64 && c.D != 128) || c.dropout > 0)) continue;  // wgmma's limits
      // With the backward variant of the same instruction family where there is one (else the default).
      std::optional<test::ForceKernel> force_fwd, force_bwd;
      std::string name = "the table's choice", bwd = "default backward";
      if (fwd) {
        force_fwd.emplace(*fwd), name = fwd->name();
        for (const KernelVariant* v : kernel_variants(KernelOp::attention_backward, dt))
          if (v->impl == fwd->impl) force_bwd.emplace(*v), bwd = v->name();
      }
      INFO("B=" << c.B << " Tq=" << c.Tq << " Tk=" << c.Tk << " H=" << c.H << " Hk=" << c.Hk << " D=" << c.D
                << " causal=" << c.causal << " pad=" << c.pad << " weight=" << c.weight << " dropout=" << c.dropout
                << " " << dtype_name(dt) << " " << name << " " << bwd);
      const bool causal = c.causal;
      auto r = test::parity(
          in,
          [&](Graph&, const std::vector<Expr>& x) {
            return attention(x[0], x[1], x[2], pad, causal, scale, x.size() > 3 ? x[3] : Expr(), c.dropout);
          },
          dt, grads);
      CHECK(r.forward < test::bar(dt, 1e-5, 2e-2));
      CHECK(r.backward < test::bar(dt, 1e-4, 3e-2));
    }
  }
}
}  // namespace

TEST_CASE("attention parity: head sizes with and without masks", "[gpu][attention]") {
  uint32_t seed = 100;
  for (int64_t D : {32, 64, 128, 256}) {
    check_case({2, 70, 70, 2, 2, D, false, false, 0}, seed += 10);
    check_case({2, 70, 70, 4, 1, D, true, true, 1}, seed += 10);
    check_case({3, 37, 75, 2, 1, D, true, true, 2}, seed += 10);
  }
}

TEST_CASE("attention parity: generic head size, decoding, Tq > Tk", "[gpu][attention]") {
  check_case({2, 33, 33, 2, 2, 40, true, false, 2}, 7);  // D = 40 runs the padded D = 64 kernel
  check_case({2, 1, 130, 4, 2, 64, true, true, 1}, 8);   // one query against a cache of 130 keys
  check_case({1, 90, 20, 2, 1, 32, true, false, 0}, 9);  // early queries see no key
}

TEST_CASE("attention parity: head sizes off the 8-element grid, wide GQA groups", "[gpu][attention]") {
  // D % 8 != 0: the bf16 tensor-core kernels take the scalar (non-16-byte) tile loads and pad the
  // head to 32 / 128 / 256 with zeros; D = 160 runs the DP = 256 kernels with 16-byte loads.
  check_case({2, 45, 77, 2, 1, 20, true, true, 1}, 11);
  check_case({2, 65, 65, 2, 2, 100, false, true, 2}, 12);
  check_case({2, 33, 70, 2, 1, 160, true, false, 0}, 13);
  check_case({2, 31, 31, 3, 3, 7, false, false, 1}, 14);
  // Eight query heads over two key heads (h reads key head h / 4), causal chunk with Tk > Tq,
  // one sequence fully padded (rows with no visible key: out 0, lse -inf, no gradient, no NaN).
  check_case({3, 50, 130, 8, 2, 64, true, true, 1}, 15);
  check_case({3, 1, 1, 8, 2, 64, false, true, 0}, 16);  // one key: batches 1 and 2 fully masked
}

TEST_CASE("attention parity: long key ranges, padding that is not a prefix", "[gpu][attention]") {
  // Few queries against 4-5 key tiles: the K/V pipelines wrap around their stages (3 for head sizes
  // up to 64, 2 above); padding masks with holes take the mma kernels' per-element mask on every tile.
  check_case({2, 20, 260, 2, 1, 64, false, 2, 1}, 41);
  check_case({1, 20, 300, 2, 1, 32, false, 1, 0}, 42);
  check_case({3, 24, 200, 2, 2, 128, true, 2, 2}, 43);
}

TEST_CASE("attention parity: the Hopper kernel's query tiles and key rings", "[gpu][attention]") {
  // 128-row query tiles (two consumer warpgroups of 64), 128-key tiles through rings of 3 (D = 64) and
  // 2 (D = 128) stages: 520 and 300 keys wrap them; Tq > Tk causal leaves the first rows without a key.
  check_case({1, 150, 520, 2, 1, 64, true, 1, 1}, 51);
  check_case({2, 200, 300, 2, 2, 128, false, 0, 2}, 52);
  check_case({1, 140, 20, 4, 2, 64, true, 0, 0}, 53);
  check_case({2, 130, 260, 2, 1, 128, true, 2, 1}, 54);
  check_case({2, 70, 300, 4, 2, 64, false, 1, 2, 0, false}, 58);  // no dQ: dK, dV and dw only
  // Unforced (the emulator's devices are sm_90a): head size 32 and attention dropout, which the wgmma
  // kernels do not take, fall back to the mma kernels; forcing wgmma onto such a call is refused.
  check_case({2, 40, 50, 2, 1, 32, true, 1, 1}, 55, false);
  check_case({2, 40, 50, 2, 1, 64, false, 0, 0, 0.2f}, 56, false);
  const Shape qs{1, 8, 2, 32}, ls{1, 2, 8};
  const Tensor q =
      Tensor::from_vector(test::random_tensor(qs, 57).to_vector<double>(), qs, Device::cuda(0), DType::bf16);
  const Tensor none;
  Tensor out = Tensor::empty(qs, DType::bf16, Device::cuda(0)), lse = Tensor::empty(ls, DType::f32, Device::cuda(0));
  for (const KernelVariant* v : kernel_variants(KernelOp::attention_forward, DType::bf16))
    if (v->impl == KernelImpl::wgmma) {
      test::ForceKernel force(*v);
      CHECK_THROWS_WITH(attention_forward(q, q, q, none, false, 0.2f, none, out, lse),
                        Catch::Contains("attention_forward:wgmma") && Catch::Contains("head dim 64 and 128"));
    }
}

TEST_CASE("attention parity: attention dropout draws the same masks on both devices", "[gpu][attention]") {
  // Training graphs (the parity runs forward and backward) with the same seed and step: every weight
  // is kept or dropped alike on the CPU and the GPU, so outputs and gradients agree as without dropout.
  check_case({2, 70, 70, 2, 2, 32, false, true, 1, 0.3f}, 31);
  check_case({2, 45, 77, 4, 1, 64, true, true, 2, 0.1f}, 32);
}

TEST_CASE("attention on cuda:1 while cuda:0 is current", "[gpu][attention]") {
  // The opt-in to more than 48 KiB of dynamic shared memory (cudaFuncSetAttribute) holds for the
  // device that is current when it is set: the launchers must make the tensors' device current first,
  // or the launch on cuda:1 fails when work on cuda:0 came last (D = 128: the kernels need 60-150 KiB).
  if (gpu_count() < 2) {
    WARN("one GPU: the cuda:1 case needs two (the CUDA emulator has two)");
    return;
  }
  const Shape qs{2, 70, 2, 128}, ls{2, 2, 70};
  const Tensor q = test::random_tensor(qs, 21, -2, 2), k = test::random_tensor(qs, 22, -2, 2),
               v = test::random_tensor(qs, 23), none;
  const float scale = 1.f / std::sqrt(128.f);
  Tensor ref = Tensor::empty(qs, DType::f64, Device::cpu()), ref_lse = Tensor::empty(ls, DType::f64, Device::cpu());
  attention_forward(q, k, v, none, true, scale, none, ref, ref_lse);
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dt));
    auto on1 = [dt](const Tensor& t) { return Tensor::from_vector(t.to_vector<double>(), t.shape(), Device::cuda(1), dt); };
    const Tensor q1 = on1(q), k1 = on1(k), v1 = on1(v);
    Tensor out = Tensor::empty(qs, dt, Device::cuda(1)), lse = Tensor::empty(ls, DType::f32, Device::cuda(1));
    Tensor::zeros(Shape{1}, DType::f32, Device::cuda(0));  // work on cuda:0 makes it the current device
    attention_forward(q1, k1, v1, none, true, scale, none, out, lse);
    CHECK(test::rel_error(out.to_vector<double>(), ref.to_vector<double>()) < (dt == DType::f32 ? 1e-5 : 2e-2));
  }
}

// Decoding through a cache's row table (lib/layers/kv_cache.h): the CUDA decoding kernel (attention_decode.cu)
// reads the rows the table names as the CPU reference does, for one query (the beam-search step) and a causal
// pair, with padding and head weights, with one chunk of keys per row and with several (few rows, many keys).
TEST_CASE("attention parity: decoding through a cache's row table", "[gpu][attention]") {
  struct Dec {
    int64_t B, Tq, H, Hk, D, R, C, Tk;
  };
  uint32_t seed = 700;
  // Every head-size instance of both kernels: 32 and 64 (40) split, 128 split with Tq = 2, 200 (256) split.
  for (const Dec& c :
       {Dec{3, 1, 4, 2, 64, 5, 40, 33}, Dec{2, 2, 2, 1, 128, 3, 300, 290}, Dec{6, 1, 8, 8, 32, 4, 16, 16},
        Dec{1, 1, 2, 2, 40, 2, 520, 517}, Dec{1, 1, 2, 1, 32, 2, 200, 190}, Dec{1, 1, 2, 2, 200, 2, 300, 260}})
    for (DType dt : test::kFloatTypes) {
      INFO("B=" << c.B << " Tq=" << c.Tq << " H=" << c.H << " Hk=" << c.Hk << " D=" << c.D << " R=" << c.R
                << " C=" << c.C << " Tk=" << c.Tk << " " << dtype_name(dt));
      std::vector<int32_t> rows(static_cast<size_t>(c.B * c.Tk));
      for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>((i * 7 + i / 5) % c.R);
      std::vector<int32_t> m(static_cast<size_t>(c.B * c.Tk), 1);
      m[1] = m[static_cast<size_t>(c.Tk - 1)] = 0;
      // Inputs rounded to dt, the reference in f64 on the CPU over the same values.
      std::vector<Tensor> ref, dev;
      for (const Shape& s :
           {Shape{c.B, c.Tq, c.H, c.D}, Shape{c.R, c.C, c.Hk, c.D}, Shape{c.R, c.C, c.Hk, c.D}, Shape{c.B, c.H}}) {
        const std::vector<double> x =
            test::rounded_to(test::random_tensor(s, ++seed, -2, 2).to_vector<double>(), s, dt);
        ref.push_back(Tensor::from_vector(x, s));
        dev.push_back(Tensor::from_vector(x, s, Device::cuda(0), dt));
      }
      const Shape ls{c.B, c.H, c.Tq};
      const float scale = 1.f / std::sqrt(static_cast<float>(c.D));
      const bool causal = c.Tq > 1;
      Tensor want = Tensor::empty(ref[0].shape(), DType::f64, Device::cpu());
      Tensor want_lse = Tensor::empty(ls, DType::f64, Device::cpu());
      attention_forward(ref[0], ref[1], ref[2], Tensor::from_vector(m, Shape{c.B, c.Tk}, Device::cpu(), DType::u8),
                        causal, scale, ref[3], want, want_lse, {}, Tensor::from_vector(rows, Shape{c.B, c.Tk}));
      Tensor out = Tensor::empty(dev[0].shape(), dt, Device::cuda(0)),
             lse = Tensor::empty(ls, DType::f32, Device::cuda(0));
      attention_forward(dev[0], dev[1], dev[2], Tensor::from_vector(m, Shape{c.B, c.Tk}, Device::cuda(0), DType::u8),
                        causal, scale, dev[3], out, lse, {},
                        Tensor::from_vector(rows, Shape{c.B, c.Tk}, Device::cuda(0)));
      CHECK(test::rel_error(out.to_vector<double>(), want.to_vector<double>()) < test::bar(dt, 1e-5, 2e-2));
      CHECK(test::rel_error(lse.to_vector<double>(), want_lse.to_vector<double>()) < 1e-5);
    }
}
