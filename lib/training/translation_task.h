// The translation task of moe-train (train_task.h): source and target vocabularies (one joint file
// or two; built from the training text when missing), parallel training data in token-budget
// batches (data::BatchGenerator: length filters, shuffling per epoch) prefetched on a background
// thread, the label-smoothed cross-entropy of Model::loss over the target tokens y </s> (each token's weighted by
// data.train.weights: data/target_weights.h; with data.train.alignment plus the guided-alignment cost of the model's
// alignment head: training/guided_alignment.h), and
// validation: loss per target token on the valid pairs (validation.h) plus BLEU when asked
// (bleu_validation.h). Covered by tests/training/resume_test.cpp and tests/scripts/e2e_translation.sh.
#pragma once
#include <memory>

#include "data/batch_generator.h"
#include "data/target_weights.h"
#include "data/vocab.h"
#include "data/word_alignments.h"
#include "training/bleu_validation.h"
#include "training/train_task.h"
#include "training/validation.h"

namespace moe {

class TranslationTask : public TrainTask {
 public:
  TranslationTask(const TrainOptions& options, data::BatchUploader& uploader, BleuDecoder bleu_decoder);
  ~TranslationTask() override;
  YAML::Node prepare(const YAML::Node& model) override;
  void attach(const Model& model) override;
  void declare(const Model& model, const Builder& b) override;
  void load_data() override;
  int64_t batches_per_epoch() const override { return batches_per_epoch_; }
  void restore(const std::string& data_state) override;
  void start() override;
  Item next() override;
  Expr loss(const Model& model, const Builder& b, const TrainBatch& batch, float label_smoothing) override;
  bool has_validation() const override { return validator_ != nullptr; }
  ValidFigures validate(const Model& model, ParameterStore& store, DType compute_dtype,
                        const BuildContext& context) override;
  const std::vector<VocabFile>& vocab_files() const override { return vocab_files_; }

 private:
  const TrainOptions& o_;
  data::BatchUploader& uploader_;
  std::string src_vocab_path_, tgt_vocab_path_;
  std::unique_ptr<data::Vocab> src_vocab_, tgt_vocab_;
  std::vector<VocabFile> vocab_files_;
  int64_t batches_per_epoch_ = 0;
  int64_t max_len_ = 0;                              // the model's position limit per side (0 = none)
  std::unique_ptr<data::BatchGenerator> generator_;  // until the prefetcher takes it over
  std::unique_ptr<data::BatchPrefetcher> prefetcher_;
  std::unique_ptr<Validator> validator_;
  BleuDecoder bleu_decoder_;
  std::unique_ptr<BleuValidator> bleu_;
  std::unique_ptr<data::WordAlignments> alignments_;  // data.train.alignment: guided alignment
  std::unique_ptr<data::TargetWeights> weights_;      // data.train.weights: data weighting
};

}  // namespace moe
