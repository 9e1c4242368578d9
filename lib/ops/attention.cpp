// Public entry points of fused attention: argument checks that name the op and the shapes, device
// dispatch, and the FLOP count used by the benchmark. The math is in attention_cpu.cpp (CPU
// reference) and cuda/ops/attention*.cu. Covered by tests/ops/attention_test.cpp ("errors").
#include "ops/attention.h"

#include "ops/dispatch.h"

namespace moe {
namespace {
constexpr const char* kOp = "attention";

struct Dims {
  int64_t B, Tq, H, D, Tk, Hk;
};

Dims check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding,
                  const Tensor& head_weight, const AttentionDropout& dropout, const Tensor& key_rows = Tensor()) {
  MOE_CHECK(q.defined() && k.defined() && v.defined(), kOp, ": q, k and v are required");
  MOE_CHECK(dropout.rate >= 0.f && dropout.rate < 1.f, kOp, ": the dropout rate ", dropout.rate, " must be in [0, 1)");
  MOE_CHECK(q.shape().ndim() == 4 && k.shape().ndim() == 4 && v.shape().ndim() == 4, kOp,
            ": q, k, v must be [B,T,H,D]; got q ", q.shape(), ", k ", k.shape(), ", v ", v.shape());
  const bool cached = key_rows.defined();
  const Dims d{q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3], cached ? key_rows.shape()[1] : k.shape()[1],
               k.shape()[2]};
  if (cached) {
    check_dtype(kOp, "key_rows", key_rows, DType::i32);
    MOE_CHECK(key_rows.shape().ndim() == 2 && key_rows.shape()[0] == d.B && d.Tk <= k.shape()[1], kOp, ": key_rows ",
              key_rows.shape(), " must be [", d.B, ", Tk] with Tk at most the cache's ", k.shape()[1], " columns (k ",
              k.shape(), ")");
    MOE_CHECK(dropout.rate == 0.f, kOp, ": a decoding cache (key_rows) takes no attention dropout");
    check_same_device(kOp, q, key_rows);
    if (key_rows.device().is_cpu()) {
      const int32_t* r = key_rows.data<int32_t>();
      for (int64_t i = 0; i < key_rows.numel(); ++i)
        MOE_CHECK(r[i] >= 0 && r[i] < k.shape()[0], kOp, ": key_rows entry ", r[i], " at position ", i,
                  " is outside the cache's ", k.shape()[0], " rows");
    }
  }
  MOE_CHECK((cached || k.shape()[0] == d.B) && k.shape()[3] == d.D, kOp, ": k ", k.shape(), " does not match q ",
            q.shape(), " (batch and head size must agree)");
  check_shape(kOp, "v", v, k.shape());
  MOE_CHECK(d.Hk > 0 && d.H % d.Hk == 0, kOp, ": the query heads (", d.H, " in q ", q.shape(),
            ") must be a multiple of the key heads (", d.Hk, " in k ", k.shape(), ")");
  MOE_CHECK(d.D >= 1 && d.D <= 256, kOp, ": head size ", d.D, " (q ", q.shape(), ") must be in [1, 256]");
  check_dtype(kOp, "k", k, q.dtype());
  check_dtype(kOp, "v", v, q.dtype());
  check_same_device(kOp, q, k, v, key_padding, head_weight);
  if (key_padding.defined()) {
    check_shape(kOp, "key_padding", key_padding, Shape{d.B, d.Tk});
    check_dtype(kOp, "key_padding", key_padding, DType::u8);
  }
  if (head_weight.defined()) {
    MOE_CHECK(head_weight.shape() == Shape({d.B, d.H}) || head_weight.shape() == Shape({d.B, d.Tq, d.H}), kOp,
              ": head_weight has shape ", head_weight.shape(), " but [", d.B, ",", d.H, "] or [", d.B, ",", d.Tq,
              ",", d.H, "] is required for q ", q.shape());
    check_dtype(kOp, "head_weight", head_weight, q.dtype());
  }
  return d;
}
}  // namespace

DType attention_lse_dtype(DType dt) { return dt == DType::f64 ? DType::f64 : DType::f32; }

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                       float scale, const Tensor& head_weight, Tensor& out, Tensor& lse,
                       const AttentionDropout& dropout, const Tensor& key_rows) {
  const Dims d = check_inputs(q, k, v, key_padding, head_weight, dropout, key_rows);
  check_same_device(kOp, q, out, lse);
  check_shape(kOp, "output", out, q.shape());
  check_dtype(kOp, "output", out, q.dtype());
  check_shape(kOp, "lse", lse, Shape{d.B, d.H, d.Tq});
  check_dtype(kOp, "lse", lse, attention_lse_dtype(q.dtype()));
  MOE_DISPATCH(q, attention_forward, q, k, v, key_padding, causal, scale, head_weight, out, lse, dropout, key_rows);
}

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding, bool causal,
                        float scale, const Tensor& head_weight, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dhead_weight,
                        const AttentionDropout& dropout) {
  const Dims d = check_inputs(q, k, v, key_padding, head_weight, dropout);
  check_same_device(kOp, q, out, lse, dout, dq, dk, dv, dhead_weight);
  check_shape(kOp, "output", out, q.shape());
  check_shape(kOp, "output gradient", dout, q.shape());
  check_dtype(kOp, "output gradient", dout, q.dtype());
  check_shape(kOp, "lse", lse, Shape{d.B, d.H, d.Tq});
  check_dtype(kOp, "lse", lse, attention_lse_dtype(q.dtype()));
  if (dq.defined()) check_shape(kOp, "q gradient", dq, q.shape()), check_dtype(kOp, "q gradient", dq, q.dtype());
  if (dk.defined()) check_shape(kOp, "k gradient", dk, k.shape()), check_dtype(kOp, "k gradient", dk, q.dtype());
  if (dv.defined()) check_shape(kOp, "v gradient", dv, v.shape()), check_dtype(kOp, "v gradient", dv, q.dtype());
  if (dhead_weight.defined()) {
    MOE_CHECK(head_weight.defined(), kOp, ": a head_weight gradient was given without head_weight");
    check_shape(kOp, "head_weight gradient", dhead_weight, head_weight.shape());
    check_dtype(kOp, "head_weight gradient", dhead_weight, q.dtype());
  }
  MOE_DISPATCH(q, attention_backward, q, k, v, key_padding, causal, scale, head_weight, out, lse, dout, dq, dk, dv,
               dhead_weight, dropout);
}

double attention_flops(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D, bool causal, bool backward) {
  // Forward: S = QK^T and O = PV, 2*Tq*Tk*D each. Backward: S recompute, dP, dV, dK, dQ: five GEMMs.
  double pairs = static_cast<double>(Tq) * static_cast<double>(Tk);
  if (causal) {
    // Visible pairs: query i sees keys j <= i + (Tk - Tq), clipped to [0, Tk).
    pairs = 0;
    for (int64_t i = 0; i < Tq; ++i) {
      const int64_t last = i + (Tk - Tq);
      pairs += static_cast<double>(last < 0 ? 0 : (last >= Tk ? Tk : last + 1));
    }
  }
  const double per_gemm = 2.0 * static_cast<double>(B) * static_cast<double>(H) * pairs * static_cast<double>(D);
  return per_gemm * (backward ? 5.0 : 2.0);
}

}  // namespace moe
