// translation_task.h implementation (setup of vocabularies and data as moe-train always did).
// Covered by tests/training/resume_test.cpp and tests/scripts/e2e_translation.sh.
#include "training/translation_task.h"

#include <spdlog/spdlog.h>

#include <tuple>

#include "common/error.h"
#include "data/dataset.h"
#include "data/subword_sampling.h"
#include "models/decoder.h"

namespace moe {

TranslationTask::TranslationTask(const TrainOptions& options, data::BatchUploader& uploader, BleuDecoder bleu_decoder)
    : o_(options), uploader_(uploader), bleu_decoder_(std::move(bleu_decoder)) {}

TranslationTask::~TranslationTask() = default;

YAML::Node TranslationTask::prepare(const YAML::Node& model) {
  const DataOptions& d = o_.data;
  const data::SpmTrainOptions spm = spm_build_options(o_);
  const data::WordVocabOptions words = word_build_options(o_);
  src_vocab_path_ = d.src_vocab;
  tgt_vocab_path_ = d.tgt_vocab;
  if (src_vocab_path_ == tgt_vocab_path_) {
    data::ensure_vocab(src_vocab_path_, {d.train_src, d.train_tgt}, spm, words);
  } else {
    data::ensure_vocab(src_vocab_path_, {d.train_src}, spm, words);
    data::ensure_vocab(tgt_vocab_path_, {d.train_tgt}, spm, words);
  }
  src_vocab_ = data::load_vocab(src_vocab_path_);
  tgt_vocab_ = data::load_vocab(tgt_vocab_path_);
  MOE_CHECK(src_vocab_->pad_id() == tgt_vocab_->pad_id() && src_vocab_->bos_id() == tgt_vocab_->bos_id() &&
                src_vocab_->eos_id() == tgt_vocab_->eos_id(),
            "vocabularies ", src_vocab_path_, " and ", tgt_vocab_path_, " disagree on the <pad>/<s>/</s> ids");
  vocab_files_ = {VocabFile::read("src", src_vocab_path_), VocabFile::read("tgt", tgt_vocab_path_)};
  spdlog::info("moe-train: vocabularies {} ({} entries) and {} ({} entries)", src_vocab_path_, src_vocab_->size(),
               tgt_vocab_path_, tgt_vocab_->size());
  YAML::Node m = YAML::Clone(model);
  m["src_vocab"] = static_cast<int64_t>(src_vocab_->size());
  m["tgt_vocab"] = static_cast<int64_t>(tgt_vocab_->size());
  m["pad_id"] = tgt_vocab_->pad_id();
  m["bos_id"] = tgt_vocab_->bos_id();
  m["eos_id"] = tgt_vocab_->eos_id();
  return m;
}

void TranslationTask::attach(const Model& model) {
  MOE_CHECK(!model.is_language_model(), "moe-train: model.type '", model.type(),
            "' is a language model, but the recipe set up translation");
  if (const EncoderDecoder* net = model.encoder_decoder()) {
    MOE_CHECK(!net->shares_embeddings() || src_vocab_path_ == tgt_vocab_path_,
              "model.tie_embeddings: all needs one joint vocabulary (data.vocab.src == data.vocab.tgt)");
    max_len_ = net->spec().max_positions - 1;  // the decoder input carries <s>, the source </s>
  }
}

void TranslationTask::declare(const Model& model, const Builder& b) {
  const std::vector<int32_t> one = {src_vocab_->unk_id()};
  const data::Batch dummy =
      uploader_.upload(data::make_batch({std::span<const int32_t>(one)}, {std::span<const int32_t>(one)}, {0},
                                        tgt_vocab_->pad_id(), tgt_vocab_->bos_id(), tgt_vocab_->eos_id()));
  model.loss(b, dummy, 0.f);
}

void TranslationTask::load_data() {
  const DataOptions& d = o_.data;
  const data::ReadOptions ro{d.skip_invalid_utf8};
  data::ParallelDataset train = data::load_parallel_dataset(d.train_src, d.train_tgt, *src_vocab_, src_vocab_path_,
                                                            *tgt_vocab_, tgt_vocab_path_, d.cache_dir, ro);
  data::BatchOptions bo;
  bo.max_tokens = o_.max_tokens;
  bo.max_sentences = o_.max_sentences;
  bo.seed = o_.seed;
  const int64_t len = d.max_len > 0 && max_len_ > 0 ? std::min(d.max_len, max_len_) : std::max(d.max_len, max_len_);
  bo.filter.max_src_len = bo.filter.max_tgt_len = len;
  bo.filter.max_ratio = d.max_ratio;
  bo.pad_id = tgt_vocab_->pad_id();
  bo.bos_id = tgt_vocab_->bos_id();
  bo.eos_id = tgt_vocab_->eos_id();
  if (d.subword.enabled()) {
    for (const auto& [key, path, vocab] : {std::tuple{"data.vocab.src", src_vocab_path_, src_vocab_.get()},
                                           std::tuple{"data.vocab.tgt", tgt_vocab_path_, tgt_vocab_.get()}})
      MOE_CHECK(dynamic_cast<const data::SentencePieceVocab*>(vocab),
                "data.train.subword_alpha samples SentencePiece segmentations, but ", key, " '", path,
                "' is a word list");
    auto text = std::make_shared<const data::ParallelText>(data::read_parallel(d.train_src, d.train_tgt, ro));
    const data::Vocab &sv = *src_vocab_, &tv = *tgt_vocab_;
    const data::SubwordSampling sampling = d.subword;
    const uint64_t seed = o_.seed;
    auto corpora = [text, &sv, &tv, sampling, seed](int64_t epoch) {  // a segmentation per (seed, epoch, side)
      const uint64_t s = (seed * 0x100000001B3ull + static_cast<uint64_t>(epoch)) * 2;
      return std::pair{data::sample_encode(text->src, sv, sampling, s),
                       data::sample_encode(text->tgt, tv, sampling, s + 1)};
    };
    generator_ = std::make_unique<data::BatchGenerator>(corpora, bo);
    spdlog::info("moe-train: subword sampling (alpha {}, nbest {}): every epoch segments the training pairs anew",
                 sampling.alpha, sampling.nbest);
  } else {
    generator_ = std::make_unique<data::BatchGenerator>(train.src, train.tgt, bo);
  }
  spdlog::info("moe-train: training data {} / {}: {}", d.train_src, d.train_tgt, generator_->filter_stats().summary());
  batches_per_epoch_ = generator_->batches_in_epoch(0);
  if (!d.train_alignment.empty()) {
    alignments_ =
        std::make_unique<data::WordAlignments>(data::WordAlignments::read(d.train_alignment, train.src, train.tgt));
    spdlog::info("moe-train: word alignments {}: {} links over {} pairs (guided alignment: cost {}, weight {})",
                 d.train_alignment, alignments_->links(), alignments_->lines(), enum_name(o_.guided_alignment.cost),
                 o_.guided_alignment.weight);
  }
  if (!d.train_weights.empty()) {
    weights_ =
        std::make_unique<data::TargetWeights>(data::TargetWeights::read(d.train_weights, d.weighting, train.tgt));
    spdlog::info("moe-train: data weighting {} ({}): {} lines, mean weight per target token {:.4g}", d.train_weights,
                 enum_name(d.weighting), weights_->lines(), weights_->mean());
  }
  MOE_CHECK(generator_->kept() > 0, "moe-train: no usable training pair in ", d.train_src, " / ", d.train_tgt, " (",
            generator_->filter_stats().summary(), ")");
  if (d.valid_src.empty()) return;
  data::ParallelDataset valid = data::load_parallel_dataset(d.valid_src, d.valid_tgt, *src_vocab_, src_vocab_path_,
                                                            *tgt_vocab_, tgt_vocab_path_, d.cache_dir, ro);
  validator_ = std::make_unique<Validator>(
      valid.src, valid.tgt,
      ValidBatchOptions{scoring_batch_tokens(o_.valid.decoding), max_len_, bo.pad_id, bo.bos_id, bo.eos_id});
  spdlog::info("moe-train: validation data {} / {}: {} pairs{}", d.valid_src, d.valid_tgt, validator_->sentences(),
               validator_->dropped() ? " (" + std::to_string(validator_->dropped()) + " empty or too long left out)"
                                     : std::string());
  if (o_.valid.bleu)
    bleu_ = std::make_unique<BleuValidator>(d.valid_src, d.valid_tgt, *src_vocab_, o_.valid, bleu_decoder_);
}

void TranslationTask::restore(const std::string& data_state) {
  generator_->restore(data::BatchGenerator::State::from_string(data_state));
}

void TranslationTask::start() { prefetcher_ = std::make_unique<data::BatchPrefetcher>(std::move(generator_)); }

TrainTask::Item TranslationTask::next() { return next_item(*prefetcher_); }

Expr TranslationTask::loss(const Model& model, const Builder& b, const TrainBatch& batch, float label_smoothing) {
  data::Batch cpu = std::get<data::Batch>(batch.data);
  if (weights_) cpu.tgt_weights = weights_->of(cpu);
  if (!alignments_) return model.loss(b, uploader_.upload(cpu), label_smoothing);
  return loss_with_guided_alignment(model, b, uploader_.upload(cpu), cpu, label_smoothing, *alignments_,
                                    o_.guided_alignment);
}

ValidFigures TranslationTask::validate(const Model& model, ParameterStore& store, DType compute_dtype,
                                       const BuildContext& context) {
  ValidFigures f = validator_->run(model, store, compute_dtype, uploader_, context);
  if (bleu_) f.bleu = bleu_->run(model, store, compute_dtype, *tgt_vocab_, nullptr, context);
  return f;
}

}  // namespace moe
