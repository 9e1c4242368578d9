// The language-model task of moe-train (train_task.h), for transformer_lm / lstm_lm (next-token
// prediction) and transformer_mlm (masked LM):
//   data      data.train.text as one token stream (each line's ids, then </s>), cut into blocks of
//             L = data.tokens_per_sample, shuffled per epoch, B = train.max_tokens / L blocks per
//             batch (data::LmBatchStream, prefetched on a background thread); a masked LM masks
//             each batch dynamically (15%: 80% <mask>, 10% random, 10% kept; data.mlm.*).
//   vocabulary data.vocab.path (SentencePiece or a word list, built when missing), stored in every
//             checkpoint as role "lm" so that moe-score ppl can score it. A masked LM's <mask> is
//             the vocabulary's own <mask> token or one appended after it (model vocab V + 1).
//   loss      Model::lm_loss: sum over scored targets of -log p(target | input), label-smoothed; with
//             data.train.weights (causal LMs) each target's times its line's weight (data/lm_token_weights.h).
//   valid     loss per token and ppl = exp(loss) on data.valid.text with the windows of Baevski &
//             Auli (valid.context tokens, each later window scoring its last valid.stride; stored in
//             the checkpoints as moe-score ppl's default windows), or the masked blocks (fixed
//             masking) of a masked LM.
// Covered by tests/training/lm_train_test.cpp and tests/scripts/e2e_lm.sh.
#pragma once
#include <memory>

#include "data/lm_batches.h"
#include "data/lm_token_weights.h"
#include "data/vocab.h"
#include "training/train_task.h"

namespace moe {

class LmTask : public TrainTask {
 public:
  LmTask(const TrainOptions& options, data::BatchUploader& uploader);
  ~LmTask() override;
  YAML::Node prepare(const YAML::Node& model) override;
  void attach(const Model& model) override;
  void declare(const Model& model, const Builder& b) override;
  void load_data() override;
  int64_t batches_per_epoch() const override { return batches_per_epoch_; }
  void restore(const std::string& data_state) override;
  void start() override;
  Item next() override;
  Expr loss(const Model& model, const Builder& b, const TrainBatch& batch, float label_smoothing) override;
  bool has_validation() const override { return !valid_batches_.empty(); }
  ValidFigures validate(const Model& model, ParameterStore& store, DType compute_dtype,
                        const BuildContext& context) override;
  const std::vector<VocabFile>& vocab_files() const override { return vocab_files_; }
  /// A causal LM's validation windows, "moe.valid.context" / "moe.valid.stride": moe-score ppl's defaults.
  std::map<std::string, std::string> checkpoint_metadata() const override;

  /// The <mask> id of a masked LM (-1 otherwise) and the model's vocabulary size (after prepare).
  int32_t mask_id() const { return mlm_.mask_id; }
  int64_t model_vocab() const { return model_vocab_; }

 private:
  /// Encodes `text` through the token cache.
  data::EncodedCorpus read_text(const std::string& text) const;

  const TrainOptions& o_;
  data::BatchUploader& uploader_;
  bool masked_;
  int64_t context_, stride_;  // validation windows (causal LMs)
  std::unique_ptr<data::Vocab> vocab_;
  std::vector<VocabFile> vocab_files_;
  int64_t batches_per_epoch_ = 0;
  data::MlmOptions mlm_;  // masked LM: every field resolved (mask id, vocabulary size, pad, seed)
  int64_t model_vocab_ = 0;
  std::unique_ptr<data::LmBatchStream> generator_;  // until the prefetcher takes it over
  std::unique_ptr<data::LmBatchPrefetcher> prefetcher_;
  std::unique_ptr<data::LmTokenWeights> weights_;  // data.train.weights: data weighting
  std::vector<data::LmBatch> valid_batches_;
  int64_t valid_lines_ = 0;
};

}  // namespace moe
