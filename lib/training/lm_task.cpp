// lm_task.h implementation. Covered by tests/training/lm_train_test.cpp and tests/scripts/e2e_lm.sh.
#include "training/lm_task.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "common/error.h"
#include "data/token_cache.h"
#include "models/lm_eval.h"
#include "models/transformer_lm.h"

namespace moe {

LmTask::LmTask(const TrainOptions& options, data::BatchUploader& uploader)
    : o_(options), uploader_(uploader), masked_(options.task == TrainTaskKind::masked_lm) {
  const int64_t L = o_.data.tokens_per_sample;
  context_ = o_.valid.context > 0 ? o_.valid.context : L;
  stride_ = o_.valid.stride > 0 ? o_.valid.stride : std::max<int64_t>(1, context_ / 2);
  MOE_CHECK(stride_ <= context_, "valid.stride ", stride_, " exceeds valid.context ", context_);
}

LmTask::~LmTask() = default;

YAML::Node LmTask::prepare(const YAML::Node& model) {
  const DataOptions& d = o_.data;
  data::ensure_vocab(d.vocab_path, {d.train_text}, spm_build_options(o_), word_build_options(o_));
  vocab_ = data::load_vocab(d.vocab_path);
  vocab_files_ = {VocabFile::read("lm", d.vocab_path)};
  model_vocab_ = vocab_->size();
  if (masked_) {
    mlm_ = d.mlm;
    if (mlm_.mask_id < 0) {
      const std::vector<int32_t> ids = vocab_->encode("<mask>");
      const bool own = ids.size() == 1 && ids[0] >= mlm_.first_normal_id && vocab_->piece(ids[0]) == "<mask>";
      mlm_.mask_id = own ? ids[0] : vocab_->size();
      if (!own) ++model_vocab_;  // <mask> appended after the vocabulary
    }
    MOE_CHECK(mlm_.mask_id >= mlm_.first_normal_id && mlm_.mask_id < model_vocab_, "data.mlm.mask_id ", mlm_.mask_id,
              " is not a normal token of ", d.vocab_path, " (ids ", mlm_.first_normal_id, "..", vocab_->size() - 1,
              "); -1 picks <mask> or appends it");
    mlm_.vocab_size = static_cast<int32_t>(model_vocab_);
    mlm_.pad_id = vocab_->pad_id();
    mlm_.seed = o_.seed;
  }
  spdlog::info("moe-train: vocabulary {} ({} entries{})", d.vocab_path, vocab_->size(),
               masked_ ? ", <mask> = " + std::to_string(mlm_.mask_id) : std::string());
  YAML::Node m = YAML::Clone(model);
  m["vocab"] = model_vocab_;
  m["pad_id"] = vocab_->pad_id();
  m["bos_id"] = vocab_->bos_id();
  m["eos_id"] = vocab_->eos_id();
  return m;
}

void LmTask::attach(const Model& model) {
  MOE_CHECK(model.is_language_model(), "moe-train: model.type '", model.type(), "' is not a language model");
  MOE_CHECK((task_of_model_type(model.type()) == TrainTaskKind::masked_lm) == masked_, "moe-train: model.type '",
            model.type(), "' does not fit a ", task_name(o_.task),
            " (masked LMs are transformer_mlm, the others transformer_lm or lstm_lm)");
  if (const auto* t = dynamic_cast<const TransformerLm*>(&model)) {
    const int64_t limit = t->config().max_positions;
    MOE_CHECK(o_.data.tokens_per_sample <= limit, "data.tokens_per_sample ", o_.data.tokens_per_sample,
              " exceeds model.max_positions ", limit);
    MOE_CHECK(masked_ || context_ <= limit, "valid.context ", context_, " exceeds model.max_positions ", limit);
  }
}

void LmTask::declare(const Model& model, const Builder& b) {
  const int32_t tok = vocab_->unk_id();
  model.lm_loss(b, uploader_.upload(data::make_lm_batch({{tok}}, {{tok}}, {{1.f}}, {0}, vocab_->pad_id())), 0.f);
}

data::EncodedCorpus LmTask::read_text(const std::string& text) const {
  std::error_code ec;  // a missing cache folder is made; failing that, the cache is only not written
  if (!o_.data.cache_dir.empty()) std::filesystem::create_directories(o_.data.cache_dir, ec);
  return data::load_or_build_cache(text, *vocab_, o_.data.vocab_path, o_.data.cache_dir,
                                   data::ReadOptions{o_.data.skip_invalid_utf8});
}

void LmTask::load_data() {
  const DataOptions& d = o_.data;
  const int64_t L = d.tokens_per_sample;
  const data::EncodedCorpus text = read_text(d.train_text);
  const int64_t lines = text.size();
  std::vector<int32_t> train = data::flatten_stream(text, vocab_->eos_id());
  const int64_t tokens = static_cast<int64_t>(train.size());
  MOE_CHECK(tokens >= 2, "moe-train: data.train.text ", d.train_text, " holds ", tokens, " tokens; need at least 2");
  if (!d.train_weights.empty()) {
    data::TargetWeights w = data::TargetWeights::read(d.train_weights, d.weighting, text, data::WeightedLines::lm_text);
    spdlog::info("moe-train: data weighting {} ({}): {} lines, mean weight per token {:.4g}", d.train_weights,
                 enum_name(d.weighting), w.lines(), w.mean());
    weights_ = std::make_unique<data::LmTokenWeights>(std::move(w), text, L);
  }
  int64_t per_batch = std::max<int64_t>(1, o_.max_tokens / L);
  if (o_.max_sentences > 0) per_batch = std::min(per_batch, o_.max_sentences);
  data::LmTrainStream blocks(std::move(train), L, per_batch, o_.seed, /*shuffle=*/true, vocab_->pad_id());
  batches_per_epoch_ = (blocks.blocks() + per_batch - 1) / per_batch;
  spdlog::info("moe-train: training text {}: {} lines, {} tokens, {} blocks of {}, {} per batch", d.train_text, lines,
               tokens, blocks.blocks(), L, per_batch);
  generator_ = std::make_unique<data::LmBatchStream>(std::move(blocks),
                                                     masked_ ? std::optional(mlm_) : std::optional<data::MlmOptions>());
  if (d.valid_text.empty()) return;
  const data::EncodedCorpus valid_text = read_text(d.valid_text);
  valid_lines_ = valid_text.size();
  const std::vector<int32_t> valid = data::flatten_stream(valid_text, vocab_->eos_id());
  MOE_CHECK(!valid.empty(), "moe-train: data.valid.text ", d.valid_text, " is empty");
  if (masked_) {
    data::MlmOptions fixed = mlm_;
    fixed.seed = o_.seed ^ 0x5851F42D4C957F2Dull;  // the same masking at every validation
    valid_batches_ =
        data::masked_eval_batches(valid, L, std::max<int64_t>(1, scoring_batch_tokens(o_.valid.decoding) / L), fixed);
  } else {
    valid_batches_ = data::eval_batches(valid, context_, stride_,
                                        std::max<int64_t>(1, scoring_batch_tokens(o_.valid.decoding) / context_),
                                        vocab_->eos_id(), vocab_->pad_id());
  }
  spdlog::info("moe-train: validation text {}: {} lines, {} tokens{}", d.valid_text, valid_lines_, valid.size(),
               masked_ ? std::string(", masked blocks")
                       : ", windows of " + std::to_string(context_) + " scoring " + std::to_string(stride_));
}

void LmTask::restore(const std::string& data_state) {
  generator_->restore(data::LmBatchStream::State::from_string(data_state));
}

void LmTask::start() { prefetcher_ = std::make_unique<data::LmBatchPrefetcher>(std::move(generator_)); }

TrainTask::Item LmTask::next() { return next_item(*prefetcher_); }

Expr LmTask::loss(const Model& model, const Builder& b, const TrainBatch& batch, float label_smoothing) {
  data::LmBatch cpu = std::get<data::LmBatch>(batch.data);
  if (weights_) cpu.weights = weights_->of(cpu);
  return model.lm_loss(b, uploader_.upload(cpu), label_smoothing);
}

std::map<std::string, std::string> LmTask::checkpoint_metadata() const {
  if (masked_) return {};
  return {{"moe.valid.context", std::to_string(context_)}, {"moe.valid.stride", std::to_string(stride_)}};
}

ValidFigures LmTask::validate(const Model& model, ParameterStore& store, DType compute_dtype,
                              const BuildContext& context) {
  const auto start = std::chrono::steady_clock::now();
  const LmEvalSum s = lm_eval_sum(model, store, valid_batches_, compute_dtype, uploader_, {}, context);
  ValidFigures f;
  f.loss = s.nll / static_cast<double>(std::max<int64_t>(s.tokens, 1));
  f.tokens = s.tokens;
  f.sentences = valid_lines_;
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return f;
}

}  // namespace moe
