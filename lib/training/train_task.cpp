// train_task.h implementation: TrainBatch's counts, the task factory and the vocabulary-building
// options shared by both tasks. Covered by tests/training/resume_test.cpp and lm_train_test.cpp.
#include "training/train_task.h"

#include "training/lm_task.h"
#include "training/translation_task.h"

namespace moe {

int64_t TrainBatch::tokens() const {
  if (const auto* b = std::get_if<data::Batch>(&data)) return b->tgt_tokens;
  return std::get<data::LmBatch>(data).tokens;
}

int64_t TrainBatch::size() const {
  if (const auto* b = std::get_if<data::Batch>(&data)) return b->size();
  return std::get<data::LmBatch>(data).size();
}

std::unique_ptr<TrainTask> make_train_task(const TrainOptions& o, data::BatchUploader& uploader,
                                           const BleuDecoder& bleu_decoder) {
  if (o.task == TrainTaskKind::translation) return std::make_unique<TranslationTask>(o, uploader, bleu_decoder);
  return std::make_unique<LmTask>(o, uploader);
}

data::SpmTrainOptions spm_build_options(const TrainOptions& o) {
  const DataOptions& d = o.data;
  data::SpmTrainOptions spm;
  spm.vocab_size = d.vocab_size;
  spm.model_type = enum_name(d.vocab_type);
  spm.normalization = d.vocab_normalization;
  spm.character_coverage = d.vocab_character_coverage;
  spm.input_sentence_size = d.vocab_sentences;
  spm.seed = static_cast<uint32_t>(o.seed);
  return spm;
}

data::WordVocabOptions word_build_options(const TrainOptions& o) {
  data::WordVocabOptions w;
  w.min_count = o.data.vocab_min_count;
  w.max_size = o.data.vocab_max_words;
  return w;
}

}  // namespace moe
