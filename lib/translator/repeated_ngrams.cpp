// repeated_ngrams.h implementation: the host finds each row's banned tokens (a scan of its tokens), and one
// scatter-add of -inf on logp's device blocks them all. Covered by tests/translator/repeated_ngrams_test.cpp.
#include "translator/repeated_ngrams.h"

#include <algorithm>
#include <limits>

#include "common/error.h"
#include "ops/gather_scatter.h"

namespace moe {

std::vector<int32_t> repeated_ngram_tokens(const std::vector<int32_t>& tokens, int64_t n) {
  std::vector<int32_t> banned;
  const int64_t len = static_cast<int64_t>(tokens.size());
  if (n <= 0 || len < n - 1) return banned;
  const auto key = tokens.end() - (n - 1);  // the last n-1 tokens
  for (int64_t i = 0; i + n - 1 < len; ++i)
    if (std::equal(key, tokens.end(), tokens.begin() + i)) banned.push_back(tokens[i + n - 1]);
  std::sort(banned.begin(), banned.end());
  banned.erase(std::unique(banned.begin(), banned.end()), banned.end());
  return banned;
}

void block_repeated_ngrams(Tensor& logp, const std::vector<const std::vector<int32_t>*>& rows, int64_t n) {
  if (n <= 0) return;
  const int64_t count = static_cast<int64_t>(rows.size());
  MOE_CHECK(logp.shape().ndim() == 2 && logp.shape()[0] == count, "no-repeat n-grams: log-probabilities ", logp.shape(),
            " for ", count, " rows");
  std::vector<std::vector<int32_t>> banned(rows.size());
  size_t width = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r]) banned[r] = repeated_ngram_tokens(*rows[r], n);
    width = std::max(width, banned[r].size());
  }
  if (width == 0) return;
  // A rectangle [N, width]: a row's unused places add 0 to its token 0.
  std::vector<int32_t> idx(rows.size() * width, 0);
  std::vector<float> add(rows.size() * width, 0.f);
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t j = 0; j < banned[r].size(); ++j) {
      idx[r * width + j] = banned[r][j];
      add[r * width + j] = -std::numeric_limits<float>::infinity();
    }
  const Shape shape{count, static_cast<int64_t>(width)};
  scatter_add_last_forward(logp, Tensor::from_vector(idx, shape, logp.device()),
                           Tensor::from_vector(add, shape, logp.device(), logp.dtype()));
}

}  // namespace moe
