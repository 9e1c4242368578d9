// TrainTask: what the shared training loop (trainer.cpp) needs from a task: vocabularies and the
// model section's vocabulary sizes, a compatibility check of the model, the parameter declaration,
// prefetched training batches with their data position (saved in the training state), the summed
// training loss of a batch and the validation figures. Two tasks implement it:
//   translation_task.h  parallel text, data::Batch, loss = Model::loss (label-smoothed CE over y </s>)
//   lm_task.h           one token stream, data::LmBatch, loss = Model::lm_loss over the scored targets
//                       (next token, or the masked positions of a masked LM)
// The loop normalises every loss by the target tokens of the whole update (TrainBatch::tokens) and
// weights auxiliary losses (Builder::add_aux_loss) by each batch's tokens, for either task.
// Covered by tests/training/resume_test.cpp and tests/training/lm_train_test.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "data/batch.h"
#include "data/batch_upload.h"
#include "data/vocab_builder.h"
#include "graph/parameters.h"
#include "layers/builder.h"
#include "models/checkpoint.h"
#include "models/model.h"
#include "training/bleu_validation.h"
#include "training/progress.h"
#include "training/train_options.h"

namespace moe {

/// One training batch of either task (CPU tensors, as the prefetcher made it).
struct TrainBatch {
  std::variant<data::Batch, data::LmBatch> data;
  /// Target tokens the loss sums over (translation: y </s>; LM: scored targets).
  int64_t tokens() const;
  /// Rows: sentence pairs or blocks.
  int64_t size() const;
};

class TrainTask {
 public:
  struct Item {
    std::optional<TrainBatch> batch;  // nullopt: the end of an epoch
    std::string data_state;           // the data position after this item (TrainingState::data_state)
    int64_t epoch = 0;                // completed epochs after this item
  };

  virtual ~TrainTask() = default;
  /// Loads (building missing ones) the vocabularies; returns `model` with vocabulary sizes and special ids.
  virtual YAML::Node prepare(const YAML::Node& model) = 0;
  /// Checks that this task trains `model` and reads what it needs from it (position limits).
  virtual void attach(const Model& model) = 0;
  /// Declares every parameter of the model in `b`'s store by building the loss of a one-token batch.
  virtual void declare(const Model& model, const Builder& b) = 0;
  /// Loads the training and validation data (after attach).
  virtual void load_data() = 0;
  /// Training batches in the first epoch (after load_data; later translation epochs differ by a few).
  virtual int64_t batches_per_epoch() const = 0;
  /// Updates in the first epoch: its batches in groups of `update_freq` (a last partial group counts).
  int64_t updates_per_epoch(int update_freq) const { return (batches_per_epoch() + update_freq - 1) / update_freq; }
  /// Moves the training data to a saved position (after load_data, before start).
  virtual void restore(const std::string& data_state) = 0;
  /// Starts producing batches on a background thread.
  virtual void start() = 0;
  virtual Item next() = 0;
  /// Summed training loss of `batch` (moved to the device here).
  virtual Expr loss(const Model& model, const Builder& b, const TrainBatch& batch, float label_smoothing) = 0;
  virtual bool has_validation() const = 0;
  /// Validation loss per target token (and BLEU for translation); epoch, update, improved left to the caller.
  /// `context`: the run-time settings of the validation graphs (the run's communicator).
  virtual ValidFigures validate(const Model& model, ParameterStore& store, DType compute_dtype,
                                const BuildContext& context) = 0;
  /// The vocabulary files every checkpoint carries.
  virtual const std::vector<VocabFile>& vocab_files() const = 0;
  /// Metadata every checkpoint carries besides the model and the counters (none by default).
  virtual std::map<std::string, std::string> checkpoint_metadata() const { return {}; }
};

/// The next item of a data::Prefetcher whose batches convert to TrainBatch (both tasks' next()).
template <class Prefetcher>
TrainTask::Item next_item(Prefetcher& prefetcher) {
  auto item = prefetcher.next();
  TrainTask::Item out;
  out.data_state = item.state.to_string();
  out.epoch = item.state.epoch;
  if (item.batch) out.batch = TrainBatch{std::move(*item.batch)};
  return out;
}

/// The task of o.task; `o` and `uploader` (which moves batches to the device) must outlive it.
/// `bleu_decoder` decodes for BLEU validation (translation; may be empty when valid.bleu is off).
std::unique_ptr<TrainTask> make_train_task(const TrainOptions& o, data::BatchUploader& uploader,
                                           const BleuDecoder& bleu_decoder);

/// How moe-train builds a missing vocabulary from the data.vocab.* keys (SentencePiece and word lists).
data::SpmTrainOptions spm_build_options(const TrainOptions& o);
data::WordVocabOptions word_build_options(const TrainOptions& o);

}  // namespace moe
