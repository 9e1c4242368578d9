// SentencePiece training (sentencepiece::SentencePieceTrainer::Train, linked) and word counting.
// Gzip inputs are decompressed to a temporary file because the trainer reads plain text only.
// Covered by tests/data/vocab_test.cpp.
#include "data/vocab_builder.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

void train_sentencepiece(const SpmTrainOptions& o) {
  MOE_CHECK(!o.inputs.empty(), "moe-vocab: no training inputs for '", o.output, "'");
  MOE_CHECK(o.model_type == "bpe" || o.model_type == "unigram", "moe-vocab: model type '", o.model_type,
            "' is not bpe or unigram");
  std::vector<std::string> temps, files;
  for (const auto& in : o.inputs) {
    MOE_CHECK(fs::exists(in), "moe-vocab: training input '", in, "' does not exist");
    if (!ends_with(in, ".gz")) {
      files.push_back(in);
      continue;
    }
    const std::string tmp = o.output + ".input" + std::to_string(temps.size()) + ".txt";
    std::ofstream out(tmp);
    LineReader r(in);
    std::string line;
    while (r.next(line)) out << line << '\n';
    temps.push_back(tmp);
    files.push_back(tmp);
  }
  std::string prefix = o.output;
  if (ends_with(prefix, ".model")) prefix.resize(prefix.size() - 6);
  std::ostringstream a;
  a << "--input=";
  for (size_t i = 0; i < files.size(); ++i) a << (i ? "," : "") << files[i];
  a << " --model_prefix=" << prefix << " --vocab_size=" << o.vocab_size << " --model_type=" << o.model_type
    << " --normalization_rule_name=" << o.normalization << " --character_coverage=" << o.character_coverage
    << " --input_sentence_size=" << o.input_sentence_size << " --shuffle_input_sentence=true"
    << " --num_threads=" << o.threads
    << " --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3 --pad_piece=<pad> --unk_piece=<unk>"
    << " --bos_piece=<s> --eos_piece=</s> --hard_vocab_limit=false";
  spdlog::info("moe-vocab: training SentencePiece {} ({} pieces) on {} file(s) -> {}", o.model_type, o.vocab_size,
               files.size(), o.output);
  sentencepiece::SetRandomGeneratorSeed(o.seed);  // sampling of input sentences
  const auto st = sentencepiece::SentencePieceTrainer::Train(a.str());
  for (const auto& t : temps) fs::remove(t);
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
