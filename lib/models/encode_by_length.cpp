// encode_by_length.h implementation.
#include "models/encode_by_length.h"

#include <algorithm>
#include <numeric>

#include "graph/expr/gather_scatter.h"
#include "graph/expr/shape_ops.h"

namespace moe {
namespace {
constexpr int64_t kMinGroupRows = 128;  // below this, a group takes the next row whatever its length

/// A source's length: one past its last real token.
std::vector<int64_t> source_lengths(const std::vector<uint8_t>& mask, int64_t rows, int64_t cols) {
  std::vector<int64_t> lengths(static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = cols; t > 0; --t)
      if (mask[static_cast<size_t>(r * cols + t - 1)]) {
        lengths[static_cast<size_t>(r)] = t;
        break;
      }
  return lengths;
}
}  // namespace

std::vector<std::vector<int64_t>> length_groups(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  std::vector<std::vector<int64_t>> groups;
  int64_t longest = 0;
  for (int64_t r : order) {
    const int64_t len = lengths[static_cast<size_t>(r)];
    const bool joins = !groups.empty() && (len * 10 >= longest * 9 ||
                                           static_cast<int64_t>(groups.back().size()) * longest < kMinGroupRows);
    if (!joins) {
      groups.emplace_back();
      longest = len;
    }
    groups.back().push_back(r);
  }
  return groups;
}

Expr encode_by_length(const Builder& b, const Tensor& src, const Tensor& src_mask, const EncodeFn& encode) {
  const BuildContext& ctx = b.context();
  if (b.training() || ctx.recorder || ctx.comm) return encode(src, src_mask);
  const int64_t rows = src.shape()[0], cols = src.shape()[1];
  const std::vector<uint8_t> mask = src_mask.to_vector<uint8_t>();
  const std::vector<int64_t> lengths = source_lengths(mask, rows, cols);
  const std::vector<std::vector<int64_t>> groups = length_groups(lengths);
  if (groups.size() <= 1) return encode(src, src_mask);

  const std::vector<int32_t> ids = src.to_vector<int32_t>();
  const Device dev = src.device();
  std::vector<Expr> parts;
  std::vector<int32_t> dest;  // each encoded row's place in the batch's [rows * cols] memory
  for (const auto& group : groups) {
    const int64_t n = static_cast<int64_t>(group.size()), width = lengths[static_cast<size_t>(group.front())];
    std::vector<int32_t> g_ids(static_cast<size_t>(n * width));
    std::vector<uint8_t> g_mask(static_cast<size_t>(n * width));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t t = 0; t < width; ++t) {
        const auto from = static_cast<size_t>(group[i] * cols + t), to = static_cast<size_t>(i * width + t);
        g_ids[to] = ids[from];
        g_mask[to] = mask[from];
        dest.push_back(static_cast<int32_t>(group[i] * cols + t));
      }
    const Expr out = encode(Tensor::from_vector(g_ids, Shape{n, width}, dev, src.dtype()),
                            Tensor::from_vector(g_mask, Shape{n, width}, dev, src_mask.dtype()));
    parts.push_back(reshape(out, {n * width, -1}));
  }
  const Expr encoded = concat(parts, 0);
  const int64_t d = encoded.shape()[1];
  const Expr memory =
      index_add(b.graph().input(Tensor::zeros(Shape{rows * cols, d}, encoded.dtype(), dev)),
                b.graph().input(Tensor::from_vector(dest, Shape{static_cast<int64_t>(dest.size())}, dev)), encoded);
  return reshape(memory, {rows, cols, d});
}

}  // namespace moe
