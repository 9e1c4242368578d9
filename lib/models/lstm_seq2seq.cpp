// lstm_seq2seq.h implementation: the encoder, the MoE blocks, the embeddings and output matrix, the
// loss (the decoder: lstm_seq2seq_decoder.cpp). Covered by tests/models/lstm_seq2seq_test.cpp.
#include "models/lstm_seq2seq.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "graph/expr/binary.h"
#include "graph/expr/cast.h"
#include "graph/expr/cross_entropy.h"
#include "graph/expr/dropout.h"
#include "graph/expr/embedding.h"
#include "graph/expr/gather_scatter.h"
#include "graph/expr/matmul.h"
#include "graph/expr/reduce.h"
#include "graph/expr/shape_ops.h"
#include "graph/expr/unary.h"
#include "layers/lstm_bidirectional.h"
#include "models/target_loss.h"

namespace moe {

LstmSeq2seq::LstmSeq2seq(LstmSeq2seqConfig config) : c_(std::move(config)) {
  MOE_CHECK(c_.tie_embeddings != TieEmbeddings::all || c_.src_vocab == c_.tgt_vocab,
            "model.tie_embeddings: all needs one joint vocabulary, not ", c_.src_vocab, " source and ", c_.tgt_vocab,
            " target entries");
  // One site for every MoE layer (feed-forward type moe unless model.moe.type says otherwise; experts of
  // hidden width 2048, the paper's, unless model.moe.hidden says otherwise).
  if (!c_.encoder_moe_after.empty() || !c_.decoder_moe_after.empty()) {
    const YAML::Node options = c_.moe && c_.moe.IsMap() ? c_.moe : YAML::Node(YAML::NodeType::Map);
    moe_ = SiteRegistry::instance().ffn(options, FfnShape{c_.d_model, 2048, Activation::relu, 0.f}, "moe");
    const std::string model = "model.type lstm_seq2seq";
    for (int l : c_.encoder_moe_after)
      add_routed_ffn(routed_, *moe_, FfnRole::encoder, -1, "encoder.l" + std::to_string(l) + ".moe", "model.moe",
                     model);
    for (int l : c_.decoder_moe_after)
      add_routed_ffn(routed_, *moe_, FfnRole::decoder, -1, "decoder.l" + std::to_string(l) + ".moe", "model.moe",
                     model);
  }
}

std::string LstmSeq2seq::site_types() const {
  return fmt::format("moe layers after encoder lstm [{}] and decoder lstm [{}]", fmt::join(c_.encoder_moe_after, ", "),
                     fmt::join(c_.decoder_moe_after, ", "));
}

const FfnSite* LstmSeq2seq::moe_after(const std::vector<int>& layers, int l) const {
  return std::find(layers.begin(), layers.end(), l) != layers.end() ? moe_.get() : nullptr;
}

std::string LstmSeq2seq::table(bool source) const {
  if (c_.tie_embeddings == TieEmbeddings::all) return "embed.shared";
  return source ? "embed.src" : "embed.tgt";
}

Expr LstmSeq2seq::embed(const Builder& b, bool source, const Tensor& ids) const {
  MOE_CHECK(ids.shape().ndim() == 2 && ids.dtype() == DType::i32, "lstm_seq2seq: token ids must be i32 [B, T], not ",
            dtype_name(ids.dtype()), " ", ids.shape());
  MOE_CHECK(ids.shape()[1] <= c_.max_positions, "lstm_seq2seq: a sequence of ", ids.shape()[1],
            " tokens exceeds model.max_positions = ", c_.max_positions);
  const int64_t vocab = source ? c_.src_vocab : c_.tgt_vocab;
  MOE_CHECK(vocab > 0, "lstm_seq2seq: model.", source ? "src_vocab" : "tgt_vocab", " is ", vocab,
            " (it is filled from the vocabulary)");
  Expr t = b.graph().param(table(source), Shape{vocab, c_.d_model}, Init::normal(0, std::pow(c_.d_model, -0.5)));
  return dropout(embedding(t, ids, 1.f, b.dtype()), c_.dropout);
}

Expr LstmSeq2seq::output_weight(const Builder& b) const {
  return c_.tie_embeddings == TieEmbeddings::none
             ? b.param("out.w", Shape{c_.tgt_vocab, c_.d_model}, Init::glorot_uniform())
             : b.param(table(false), Shape{c_.tgt_vocab, c_.d_model}, Init::normal(0, std::pow(c_.d_model, -0.5)));
}

Expr LstmSeq2seq::output_logits(const Builder& b, const Expr& h, const Tensor& weight_rows) const {
  const Shape s = h.shape();
  Expr rows = reshape(h, Shape{s[0] * s[1], s[2]});
  Expr w = weight_rows.defined() ? b.graph().input(weight_rows) : cast(output_weight(b), b.dtype());
  return matmul(rows, w, false, true);
}

Expr LstmSeq2seq::moe_block(const Builder& b, const FfnSite& site, const Expr& x, const Tensor& mask,
                            FfnRole role) const {
  auto branch = [&](const Expr& rows, const Tensor& padding) {
    return dropout(sigmoid(site.build(b, rows, FfnInput{role, -1, padding})), c_.dropout);
  };
  if (site.reads_padding(role)) return add(x, branch(x, mask));  // whole rows: the router excludes the padding
  if (!b.training() || !mask.defined()) return add(x, branch(x, Tensor()));
  // Training: the layer's batch is the real tokens (the batchwise gate ranks them; the balancing
  // losses count them); padding rows keep x.
  const std::vector<int32_t> m = mask.to_vector<int32_t>();
  std::vector<int32_t> real;
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i] != 0) real.push_back(static_cast<int32_t>(i));
  if (real.size() == m.size()) return add(x, branch(x, Tensor()));
  const Shape s = x.shape();
  MOE_CHECK(s.ndim() == 3 && static_cast<int64_t>(m.size()) == s[0] * s[1], "lstm_seq2seq: mask ", mask.shape(),
            " for states ", s);
  Graph& g = b.graph();
  Expr idx = g.input(Tensor::from_vector(real, Shape{static_cast<int64_t>(real.size())}, g.device()));
  Expr y = branch(index_select(reshape(x, Shape{s[0] * s[1], s[2]}), idx), Tensor());
  Expr spread = index_add(g.input(Tensor::zeros(Shape{s[0] * s[1], s[2]}, y.dtype(), g.device())), idx, y);
  return add(x, reshape(spread, s));
}

Expr LstmSeq2seq::encode(const Builder& b, const Tensor& src, const Tensor& src_mask) const {
  Expr x = embed(b, true, src);
  const Builder enc = b.sub("encoder");
  for (int l = 0; l < c_.enc_layers; ++l) {
    const Builder layer = enc.layer(l);
    Expr y = l == 0 && c_.bidirectional ? bidirectional_lstm_layer(layer.sub("lstm"), x, src_mask, c_.direction())
                                        : lstm_layer(layer.sub("lstm"), x, c_.lstm(c_.d_model));
    x = add(dropout(y, c_.dropout), x);
    if (const FfnSite* site = moe_after(c_.encoder_moe_after, l))
      x = moe_block(layer.sub("moe"), *site, x, src_mask, FfnRole::encoder);
  }
  return x;
}

Expr LstmSeq2seq::loss(const Builder& b, const data::Batch& batch, float label_smoothing) const {
  b.context().target_tokens = batch.tgt_tokens;  // aux losses normalise against it
  Expr memory = encode(b, batch.src, batch.src_mask);
  Expr logits = decode(b, memory, batch.src_mask, batch.tgt_in, batch.tgt_mask);
  Expr targets = b.graph().input(batch.tgt_out.view(Shape{batch.tgt_out.numel()}));
  return summed_target_loss(b, cross_entropy(logits, targets, label_smoothing, c_.pad_id), batch.tgt_weights, {});
}

}  // namespace moe
