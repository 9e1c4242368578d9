// Language models on real text (MOE_SHARED_DATA): a small adaptive-softmax Transformer LM on the
// WikiText-103 sample and a small LSTM LM on the 1B-word held-out shard, fed by lib/data's
// LmTrainStream and evaluated with its Baevski & Auli windows; validation loss must fall clearly.
// Skipped (with a warning) when the shared data folder is missing.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "data/corpus.h"
#include "data/lm_stream.h"
#include "data/token_cache.h"
#include "data/vocab.h"
#include "models/lstm_lm.h"
#include "models/transformer_lm.h"
#include "training/optimizer.h"

using namespace moe;

namespace {
std::vector<std::string> read_lines(const std::string& path, int64_t first, int64_t count) {
  data::LineReader r(path);
  std::vector<std::string> lines;
  std::string line;
  for (int64_t i = 0; r.next(line) && static_cast<int64_t>(lines.size()) < count; ++i)
    if (i >= first) lines.push_back(line);
  return lines;
}

/// The `size` most frequent words, count-descending (ties alphabetical).
data::WordVocab top_words(const std::vector<std::string>& lines, size_t size) {
  std::map<std::string, int64_t> counts;
  for (const auto& l : lines) {
    std::istringstream in(l);
    std::string w;
    while (in >> w) ++counts[w];
  }
  std::vector<std::pair<std::string, int64_t>> v(counts.begin(), counts.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> words;
  for (size_t i = 0; i < v.size() && words.size() < size; ++i)
    if (v[i].first != "<unk>") words.push_back(v[i].first);
  return data::WordVocab(words);
}

/// Validation loss per scored token.
double valid_loss(const Model& model, ParameterStore& store, const std::vector<data::LmBatch>& batches) {
  double loss = 0, tokens = 0;
  for (const auto& batch : batches) {
    Graph g(Device::cpu(), &store, GraphOptions{.training = false});
    loss += model.lm_loss(Builder(g), batch, 0.f).val().item();
    tokens += static_cast<double>(batch.tokens);
  }
  return loss / tokens;
}

/// Trains `model` for `steps` updates on `train` and returns the validation loss before and after.
std::pair<double, double> train_and_eval(const Model& model, const std::vector<int32_t>& train,
                                         const std::vector<int32_t>& valid, int steps, double lr) {
  ParameterStore store(Device::cpu(), 1);
  const auto vb = data::eval_batches(valid, 32, 16, 16);
  const double before = valid_loss(model, store, vb);
  data::LmTrainStream stream(train, 32, 16, 7);
  auto opt = Optimizer::create("adam");
  for (int step = 0; step < steps; ++step) {
    auto batch = stream.next();
    if (!batch) batch = stream.next();
    Graph g(Device::cpu(), &store, GraphOptions{.training = true, .seed = 1, .step = static_cast<uint64_t>(step)});
    Expr loss = model.lm_loss(Builder(g), *batch, 0.f);
    g.forward();
    store.zero_grads();
    g.backward(loss, 1.0 / static_cast<double>(batch->tokens));
    opt->step(store, lr, 1.0);
  }
  return {before, valid_loss(model, store, vb)};
}
}  // namespace

TEST_CASE("lm real data: adaptive Transformer LM on the WikiText-103 sample", "[models][real_data]") {
  const std::string dir = std::string(MOE_SHARED_DATA) + "/wikitext-103-sample";
  if (!std::filesystem::exists(dir + "/wiki.train.tokens")) {
    WARN("no shared data at " << dir << "; skipped");
    return;
  }
  const auto train_lines = read_lines(dir + "/wiki.train.tokens", 0, 400);
  const data::WordVocab vocab = top_words(train_lines, 1000);
  const auto train = data::flatten_stream(data::EncodedCorpus::encode(train_lines, vocab), vocab.eos_id());
  const auto valid = data::flatten_stream(
      data::EncodedCorpus::encode(read_lines(dir + "/wiki.valid.tokens", 0, 40), vocab), vocab.eos_id());
  TransformerLmConfig c;
  c.vocab = vocab.size();
  c.d_model = 32;
  c.ffn_dim = 64;
  c.heads = 4;
  c.layers = 2;
  c.dropout = 0.1f;
  c.max_positions = 64;
  c.adaptive_input_cutoffs = c.adaptive_softmax_cutoffs = {100, 400};
  c.adaptive_input_factor = c.adaptive_softmax_factor = 2;
  const auto [before, after] = train_and_eval(TransformerLm(c), train, valid, 120, 3e-3);
  INFO("valid loss per token before " << before << " after " << after << " (ppl " << std::exp(after) << ")");
  CHECK(before > std::log(1004.0) - 1.0);
  CHECK(after < before - 1.5);
}

TEST_CASE("lm real data: LSTM LM on the 1B-word held-out shard", "[models][real_data]") {
  const std::string path = std::string(MOE_SHARED_DATA) + "/1b-word-sample/news.en.heldout-00000-of-00050";
  if (!std::filesystem::exists(path)) {
    WARN("no shared data at " << path << "; skipped");
    return;
  }
  const auto train_lines = read_lines(path, 0, 1500);
  const data::WordVocab vocab = top_words(train_lines, 800);
  const auto train = data::flatten_stream(data::EncodedCorpus::encode(train_lines, vocab), vocab.eos_id());
  const auto valid =
      data::flatten_stream(data::EncodedCorpus::encode(read_lines(path, 5800, 150), vocab), vocab.eos_id());
  LstmLmConfig c;
  c.vocab = vocab.size();
  c.embed_dim = 32;
  c.hidden = 64;
  c.projection = 32;
  c.layers = 1;
  c.dropout = 0.1f;
  const auto [before, after] = train_and_eval(LstmLm(c), train, valid, 120, 1e-2);
  INFO("valid loss per token before " << before << " after " << after << " (ppl " << std::exp(after) << ")");
  CHECK(before > std::log(804.0) - 1.0);
  CHECK(after < before - 1.5);
}
