// Batch packing (row-major [B, T] i32 tensors padded with pad_id; u8 masks for translation, f32 for LM; the real
// positions of both sides and the targets' ids).
// Covered by tests/data/batch_test.cpp.
#include "data/batch.h"

#include <algorithm>

#include "common/error.h"

namespace moe::data {

Batch make_batch(const std::vector<std::span<const int32_t>>& src, const std::vector<std::span<const int32_t>>& tgt,
                 std::vector<int64_t> ids, int32_t pad_id, int32_t bos_id, int32_t eos_id) {
  const size_t B = src.size();
  MOE_CHECK(B > 0 && tgt.size() == B && ids.size() == B, "make_batch: ", B, " sources, ", tgt.size(), " targets, ",
            ids.size(), " ids (need the same non-zero count)");
  size_t S = 0, T = 0;
  for (size_t b = 0; b < B; ++b) {
    S = std::max(S, src[b].size() + 1);
    T = std::max(T, tgt[b].size() + 1);
  }
  std::vector<int32_t> s(B * S, pad_id), ti(B * T, pad_id), to(B * T, pad_id);
  std::vector<float> sm(B * S, 0.f), tm(B * T, 0.f);
  Batch batch;
  for (size_t b = 0; b < B; ++b) {
    const auto& x = src[b];
    const auto& y = tgt[b];
    std::copy(x.begin(), x.end(), s.begin() + b * S);
    s[b * S + x.size()] = eos_id;
    std::fill(sm.begin() + b * S, sm.begin() + b * S + x.size() + 1, 1.f);
    ti[b * T] = bos_id;
    std::copy(y.begin(), y.end(), ti.begin() + b * T + 1);
    std::copy(y.begin(), y.end(), to.begin() + b * T);
    to[b * T + y.size()] = eos_id;
    std::fill(tm.begin() + b * T, tm.begin() + b * T + y.size() + 1, 1.f);
    batch.src_lengths.push_back(static_cast<int32_t>(x.size() + 1));
    batch.tgt_lengths.push_back(static_cast<int32_t>(y.size() + 1));
    batch.src_tokens += static_cast<int64_t>(x.size() + 1);
    batch.tgt_tokens += static_cast<int64_t>(y.size() + 1);
  }
  const auto Bi = static_cast<int64_t>(B), Si = static_cast<int64_t>(S), Ti = static_cast<int64_t>(T);
  batch.src = Tensor::from_vector<int32_t>(s, Shape{Bi, Si});
  batch.src_mask = Tensor::from_vector<float>(sm, Shape{Bi, Si}, Device::cpu(), DType::u8);
  batch.tgt_in = Tensor::from_vector<int32_t>(ti, Shape{Bi, Ti});
  batch.tgt_out = Tensor::from_vector<int32_t>(to, Shape{Bi, Ti});
  batch.tgt_mask = Tensor::from_vector<float>(tm, Shape{Bi, Ti}, Device::cpu(), DType::u8);
  batch.ids = std::move(ids);
  set_real_rows(batch);
  return batch;
}

void set_real_rows(Batch& batch) {
  const std::vector<int32_t> out = batch.tgt_out.to_vector<int32_t>();
  const std::vector<float> mask = batch.tgt_mask.to_vector<float>();
  std::vector<int32_t> rows, labels;
  for (size_t i = 0; i < out.size(); ++i)
    if (mask[i] != 0) {
      rows.push_back(static_cast<int32_t>(i));
      labels.push_back(out[i]);
    }
  const auto n = static_cast<int64_t>(rows.size());
  batch.tgt_rows = Tensor::from_vector<int32_t>(rows, Shape{n});
  batch.tgt_labels = Tensor::from_vector<int32_t>(labels, Shape{n});
  const std::vector<float> src_mask = batch.src_mask.to_vector<float>();
  std::vector<int32_t> src_rows;
  for (size_t i = 0; i < src_mask.size(); ++i)
    if (src_mask[i] != 0) src_rows.push_back(static_cast<int32_t>(i));
  batch.src_rows = Tensor::from_vector<int32_t>(src_rows, Shape{static_cast<int64_t>(src_rows.size())});
}

LmBatch make_lm_batch(const std::vector<std::vector<int32_t>>& inputs, const std::vector<std::vector<int32_t>>& targets,
                      const std::vector<std::vector<float>>& masks, std::vector<int64_t> ids, int32_t pad_id) {
  const size_t B = inputs.size();
  MOE_CHECK(B > 0 && targets.size() == B && masks.size() == B && ids.size() == B, "make_lm_batch: ", B,
            " inputs, ", targets.size(), " targets, ", masks.size(), " masks, ", ids.size(), " ids");
  size_t T = 1;
  for (size_t b = 0; b < B; ++b) {
    MOE_CHECK(targets[b].size() == inputs[b].size() && masks[b].size() == inputs[b].size(), "make_lm_batch: row ",
              b, " has input ", inputs[b].size(), ", target ", targets[b].size(), ", mask ", masks[b].size());
    T = std::max(T, inputs[b].size());
  }
  std::vector<int32_t> in(B * T, pad_id), tg(B * T, pad_id);
  std::vector<float> m(B * T, 0.f);
  LmBatch batch;
  for (size_t b = 0; b < B; ++b) {
    std::copy(inputs[b].begin(), inputs[b].end(), in.begin() + b * T);
    std::copy(targets[b].begin(), targets[b].end(), tg.begin() + b * T);
    std::copy(masks[b].begin(), masks[b].end(), m.begin() + b * T);
    for (float v : masks[b]) batch.tokens += v != 0.f;
  }
  const auto Bi = static_cast<int64_t>(B), Ti = static_cast<int64_t>(T);
  batch.input = Tensor::from_vector<int32_t>(in, Shape{Bi, Ti});
  batch.target = Tensor::from_vector<int32_t>(tg, Shape{Bi, Ti});
  batch.mask = Tensor::from_vector<float>(m, Shape{Bi, Ti});
  batch.ids = std::move(ids);
  return batch;
}

}  // namespace moe::data
