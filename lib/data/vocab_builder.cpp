// SentencePiece training (sentencepiece::SentencePieceTrainer::Train, linked) and word counting.
// The trainer reads our LineReader through a SentenceIterator (plain or gzip, any path).
// Covered by tests/data/vocab_test.cpp.
#include "data/vocab_builder.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "common/error.h"
#include "data/corpus.h"

namespace fs = std::filesystem;

namespace moe::data {

namespace {
bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}
}  // namespace

namespace {
// Feeds the trainer every line of every input (plain or .gz) through our LineReader, so paths with
// commas or spaces and compressed files need no temporary copies.
class FileLines : public sentencepiece::SentenceIterator {
 public:
  explicit FileLines(std::vector<std::string> files) : files_(std::move(files)) { Next(); }
  bool done() const override { return done_; }
  void Next() override {
    while (true) {
      if (reader_ && reader_->next(line_)) return;
      if (index_ == files_.size()) {
        done_ = true;
        return;
      }
      reader_ = std::make_unique<LineReader>(files_[index_++]);
    }
  }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string> files_;
  size_t index_ = 0;
  std::unique_ptr<LineReader> reader_;
  std::string line_;
  bool done_ = false;
};
}  // namespace

void train_sentencepiece(const SpmTrainOptions& o) {
  MOE_CHECK(!o.inputs.empty(), "moe-vocab: no training inputs for '", o.output, "'");
  MOE_CHECK(o.model_type == "bpe" || o.model_type == "unigram", "moe-vocab: model type '", o.model_type,
            "' is not bpe or unigram");
  for (const auto& in : o.inputs) MOE_CHECK(fs::exists(in), "moe-vocab: training input '", in, "' does not exist");
  std::string prefix = o.output;
  if (ends_with(prefix, ".model")) prefix.resize(prefix.size() - 6);
  const std::unordered_map<std::string, std::string> args{
      {"model_prefix", prefix},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"model_type", o.model_type},
      {"normalization_rule_name", o.normalization},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"input_sentence_size", std::to_string(o.input_sentence_size)},
      {"shuffle_input_sentence", "true"},
      {"num_threads", std::to_string(o.threads)},
      {"pad_id", "0"}, {"unk_id", "1"}, {"bos_id", "2"}, {"eos_id", "3"},
      {"pad_piece", "<pad>"}, {"unk_piece", "<unk>"}, {"bos_piece", "<s>"}, {"eos_piece", "</s>"},
      {"hard_vocab_limit", "false"}};
  spdlog::info("moe-vocab: training SentencePiece {} ({} pieces) on {} file(s) -> {}", o.model_type, o.vocab_size,
               o.inputs.size(), o.output);
  sentencepiece::SetRandomGeneratorSeed(o.seed);  // sampling of input sentences
  FileLines lines(o.inputs);
  const auto st = sentencepiece::SentencePieceTrainer::Train(args, &lines);
  MOE_CHECK(st.ok(), "moe-vocab: SentencePiece training for '", o.output, "' failed: ", st.ToString());
  if (prefix + ".model" != o.output) {
    fs::rename(prefix + ".model", o.output);
    fs::rename(prefix + ".vocab", o.output + ".vocab");
  }
}

int64_t build_word_vocab(const WordVocabOptions& o) {
  MOE_CHECK(!o.inputs.empty(), "moe-vocab: no inputs for the word vocabulary '", o.output, "'");
  std::unordered_map<std::string, int64_t> counts;
  std::string line, tok;
  for (const auto& in : o.inputs) {
    LineReader r(in);
    while (r.next(line)) {
      size_t i = 0;
      while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        size_t j = i;
        while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
        if (j > i) ++counts[line.substr(i, j - i)];
        i = j;
      }
    }
  }
  std::vector<std::pair<std::string, int64_t>> v;
  for (auto& [w, c] : counts) {
    if (c < o.min_count) continue;
    if (w == "<pad>" || w == "<s>" || w == "</s>" || w == "<unk>" || w == "<UNK>" || w == "<S>" || w == "</S>") continue;
    v.emplace_back(w, c);
  }
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  if (o.max_size > 0 && static_cast<int64_t>(v.size()) > o.max_size) v.resize(static_cast<size_t>(o.max_size));
  std::ofstream out(o.output);
  MOE_CHECK(out.good(), "moe-vocab: cannot write '", o.output, "'");
  for (auto& [w, c] : v) out << w << ' ' << c << '\n';
  MOE_CHECK(out.good(), "moe-vocab: write to '", o.output, "' failed");
  spdlog::info("moe-vocab: {} words (of {} distinct, min count {}) -> {}", v.size(), counts.size(), o.min_count, o.output);
  return static_cast<int64_t>(v.size());
}

bool ensure_vocab(const std::string& path, const std::vector<std::string>& inputs, SpmTrainOptions spm,
                  WordVocabOptions word) {
  if (fs::exists(path)) return false;
  spdlog::info("moe-vocab: vocabulary {} is missing: building it from {} file(s)", path, inputs.size());
  if (ends_with(path, ".spm") || ends_with(path, ".model")) {
    spm.inputs = inputs;
    spm.output = path;
    train_sentencepiece(spm);
  } else {
    word.inputs = inputs;
    word.output = path;
    build_word_vocab(word);
  }
  return true;
}

}  // namespace moe::data
