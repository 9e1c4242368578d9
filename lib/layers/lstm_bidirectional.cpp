// lstm_bidirectional.h implementation: the reversal is one row gather (index_select) on [B * S, f]
// before and after the backward direction. Covered by tests/models/lstm_seq2seq_layers_test.cpp.
#include "layers/lstm_bidirectional.h"

#include <vector>

#include "graph/expr/gather_scatter.h"
#include "graph/expr/shape_ops.h"

namespace moe {

Tensor reverse_within_length(const Tensor& mask, int64_t batch, int64_t len, Device device) {
  MOE_CHECK(!mask.defined() || mask.shape() == Shape({batch, len}), "bidirectional lstm: mask ", mask.shape(),
            " does not match the input's [", batch, ", ", len, "]");
  const std::vector<int32_t> m =
      mask.defined() ? mask.to_vector<int32_t>() : std::vector<int32_t>(static_cast<size_t>(batch * len), 1);
  std::vector<int32_t> idx(static_cast<size_t>(batch * len));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t n = 0;
    for (int64_t t = 0; t < len; ++t) n += m[static_cast<size_t>(b * len + t)] != 0;
    for (int64_t t = 0; t < len; ++t)
      idx[static_cast<size_t>(b * len + t)] = static_cast<int32_t>(b * len + (t < n ? n - 1 - t : t));
  }
  return Tensor::from_vector(idx, Shape{batch * len}, device);
}

Expr bidirectional_lstm(const Expr& x, const Tensor& mask, const LstmWeights& fw, const LstmWeights& bw) {
  MOE_CHECK(x.shape().ndim() == 3, "bidirectional lstm: input must be [B, S, features], not ", x.shape());
  const int64_t B = x.shape()[0], S = x.shape()[1], f = x.shape()[2];
  Expr forward = lstm_sequence(x, fw.w_x, fw.bias, fw.w_h, fw.w_p);
  Expr rev = x.graph().input(reverse_within_length(mask, B, S, x.graph().device()));
  auto reverse = [&](const Expr& v, int64_t width) {
    return reshape(index_select(reshape(v, Shape{B * S, width}), rev), Shape{B, S, width});
  };
  Expr backward = lstm_sequence(reverse(x, f), bw.w_x, bw.bias, bw.w_h, bw.w_p);
  backward = reverse(backward, backward.shape()[2]);
  return concat({forward, backward}, 2);
}

Expr bidirectional_lstm_layer(const Builder& b, const Expr& x, const Tensor& mask, const LstmSpec& direction) {
  MOE_CHECK(x.shape().ndim() == 3 && x.shape()[2] == direction.input, b.name("fw.wx"), ": input ", x.shape(),
            " does not have ", direction.input, " features");
  return bidirectional_lstm(x, mask, lstm_weights(b.sub("fw"), direction), lstm_weights(b.sub("bw"), direction));
}

}  // namespace moe
