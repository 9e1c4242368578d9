// What moe-score's model commands share (ppl, pairs, sentences, experts): the model flags (-m, with --weights and
// --lm for the commands that score through a decoder step by step; --device, --dtype, --quantize and the decoding
// keys a command takes), the device and dtype they resolve to, the MAE future-gate warning, the stop points (a stop
// writes nothing: exit status 75), and the per-line score output of pairs and sentences:
//   log_prob<TAB>tokens[<TAB>extra][<TAB>word scores]   then the summary "CMD: N lines, T tokens, log-prob X, PPL = Y"
// (on stderr, or alone on stdout with --summary). Covered by tests/translator/scoring_test.cpp,
// tests/translator/lm_fusion_test.cpp and tests/translator/sentence_scores_test.cpp.
#pragma once
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "data/vocab.h"
#include "models/checkpoint.h"
#include "models/decoding_options.h"
#include "models/int8_model.h"
#include "translator/pair_scores.h"
#include "translator/translation_models.h"

namespace CLI {
class App;
}  // namespace CLI

namespace moe {

struct ModelOptions {
  std::vector<std::string> models;  // one, or (pairs) several scored as an ensemble
  std::vector<double> weights;      // pairs' --weights
  LmFusion lm;                      // pairs' --lm, --lm-weight
  DecodingOptions decoding;         // --device and --dtype; the command's own keys besides
  Quantize quantize = Quantize::none;
  const std::string& model() const { return models.front(); }
};

/// -m once, or with `ensemble` (pairs) once per model, with --weights and --lm; --device, --dtype and the decoding
/// options `keys` besides.
void add_model_options(CLI::App& sub, ModelOptions& m, bool ensemble = false, std::vector<std::string> keys = {});

/// Resolved device and dtype; bf16 needs a GPU.
std::pair<Device, DType> placement(const ModelOptions& m, const char* cmd);

/// Warns on `err` when the MAE gates of the checkpoint's model see future target tokens in `what`.
void warn_future_gates(const LoadedCheckpoint& ck, const char* cmd, const std::string& what, std::ostream& err);

/// Installs the stop handlers (SIGTERM / SIGINT / SIGUSR1, common/stop_signal.h) and returns the stop point
/// of `cmd`, called after every batch: the model commands write their results only at the end, so a stop
/// before then writes nothing (exit status 75).
std::function<void()> stop_points(const char* cmd);

/// `v` with `digits` decimals.
std::string num(double v, int digits);

/// Token ids of `lines` under `vocab`.
std::vector<std::vector<int32_t>> encode_lines(const std::vector<std::string>& lines, const data::Vocab& vocab);

/// How write_score_lines writes: the command's name (the summary's), --summary, --word-scores, and the fields
/// between the tokens and the word scores (pairs' alignments; none when empty).
struct ScoreLines {
  const char* cmd = "";
  const char* unit = "tokens";  // what the summary counts ("target tokens" for pairs)
  bool summary = false, word_scores = false;
  std::function<std::string(size_t)> extra{};
  std::string model{};  // for the error of a model without word scores
};

/// One line per score (none with `how.summary`), then the corpus summary.
void write_score_lines(std::ostream& out, std::ostream& err, const std::vector<PairScore>& scores, const ScoreLines& how);

}  // namespace moe
