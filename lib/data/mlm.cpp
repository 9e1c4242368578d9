// Dynamic MLM masking with Philox draws: lane 0 selects, lane 1 chooses mask/random/keep, lane 2
// picks the random token. Covered by tests/data/mlm_test.cpp.
#include "data/mlm.h"

#include <algorithm>

#include "common/error.h"
#include "tensor/philox.h"

namespace moe::data {

LmBatch mask_tokens(const Tensor& tokens, const MlmOptions& o, uint64_t step) {
  MOE_CHECK(tokens.dtype() == DType::i32 && tokens.shape().ndim() == 2, "mask_tokens: need i32 [B, T] tokens, got ",
            tokens.shape(), " ", dtype_name(tokens.dtype()));
  MOE_CHECK(o.mask_id >= 0 && o.mask_id < o.vocab_size, "mask_tokens: mask_id ", o.mask_id,
            " outside the vocabulary of ", o.vocab_size);
  MOE_CHECK(o.first_normal_id < o.vocab_size, "mask_tokens: first_normal_id ", o.first_normal_id,
            " leaves no normal tokens in a vocabulary of ", o.vocab_size);
  MOE_CHECK(o.mask_prob >= 0 && o.mask_prob <= 1 && o.replace_mask >= 0 && o.replace_random >= 0 &&
                o.replace_mask + o.replace_random <= 1,
            "mask_tokens: bad probabilities (mask ", o.mask_prob, ", <mask> ", o.replace_mask, ", random ",
            o.replace_random, ")");
  const auto x = tokens.to_vector<int32_t>();
  std::vector<int32_t> in(x), tg(x);
  std::vector<float> m(x.size(), 0.f);
  LmBatch b;
  const uint32_t normals = static_cast<uint32_t>(o.vocab_size - o.first_normal_id);
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == o.pad_id || x[i] < o.first_normal_id || x[i] == o.mask_id) continue;
    float u[4];
    philox_uniform4(o.seed, step, i, u);
    if (u[0] >= o.mask_prob) continue;
    m[i] = 1.f;
    ++b.tokens;
    if (u[1] < o.replace_mask) {
      in[i] = o.mask_id;
    } else if (u[1] < o.replace_mask + o.replace_random) {
      in[i] = o.first_normal_id + static_cast<int32_t>(std::min<uint32_t>(normals - 1, static_cast<uint32_t>(u[2] * normals)));
    }
  }
  b.input = Tensor::from_vector<int32_t>(in, tokens.shape());
  b.target = Tensor::from_vector<int32_t>(tg, tokens.shape());
  b.mask = Tensor::from_vector<float>(m, tokens.shape());
  for (int64_t r = 0; r < tokens.shape()[0]; ++r) b.ids.push_back(r);
  return b;
}

}  // namespace moe::data
