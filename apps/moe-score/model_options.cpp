// model_options.h implementation. Covered by tests/translator/scoring_test.cpp and
// tests/translator/sentence_scores_test.cpp.
#include "moe-score/model_options.h"

#include <CLI/CLI.hpp>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "cli/decoding_options.h"
#include "cli/ensemble_options.h"
#include "cli/enum_option.h"
#include "common/stop_signal.h"
#include "translator/translate_text.h"

namespace moe {

void add_model_options(CLI::App& sub, ModelOptions& m, bool ensemble, std::vector<std::string> keys) {
  if (ensemble) {
    cli::add_ensemble_options(sub, m.models, m.weights, m.lm,
                              " (an ensemble, or a model with --lm, is scored step by step)");
  } else {
    sub.add_option("-m,--model", m.models, "checkpoint (.safetensors)")->required()->expected(1);
  }
  keys.insert(keys.end(), {"device", "dtype"});
  cli::add_decoding_options(sub, m.decoding, keys);
  cli::add_enum_option(sub, "--quantize", m.quantize,
                       "int8: weights and activations in int8 on the CPU (models/int8_model.h)");
}

std::pair<Device, DType> placement(const ModelOptions& m, const char* cmd) {
  try {
    const Placement p = decoding_placement(m.decoding, cli::flag_naming());
    return {p.device, p.dtype};
  } catch (const Error& e) {
    MOE_FAIL(cmd, ": ", e.what());
  }
}

void warn_future_gates(const LoadedCheckpoint& ck, const char* cmd, const std::string& what, std::ostream& err) {
  const std::string w = future_warning(*ck.model, what);
  if (!w.empty()) err << "moe-score " << cmd << ": warning: " << w << "\n";
}

std::function<void()> stop_points(const char* cmd) {
  install_stop_handlers("moe-score");
  return [cmd] { throw_if_stopped(std::string("moe-score ") + cmd, "; nothing was written"); };
}

std::string num(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

std::vector<std::vector<int32_t>> encode_lines(const std::vector<std::string>& lines, const data::Vocab& vocab) {
  std::vector<std::vector<int32_t>> ids;
  for (const auto& l : lines) ids.push_back(vocab.encode(l));
  return ids;
}

void write_score_lines(std::ostream& out, std::ostream& err, const std::vector<PairScore>& scores,
                       const ScoreLines& how) {
  double lp = 0;
  int64_t tokens = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    lp += scores[i].log_prob;
    tokens += scores[i].tokens;
    if (how.summary) continue;
    out << num(scores[i].log_prob, 6) << '\t' << scores[i].tokens;
    if (how.extra) out << '\t' << how.extra(i);
    if (how.word_scores) {
      MOE_CHECK(static_cast<int64_t>(scores[i].token_scores.size()) == scores[i].tokens, "'", how.model,
                "' holds a model scored a pair at a time (Model::loss): it has no word scores");
      out << '\t' << format_word_scores(scores[i].token_scores);
    }
    out << '\n';
  }
  std::ostream& sum = how.summary ? out : err;
  sum << how.cmd << ": " << scores.size() << " lines, " << tokens << " " << how.unit << ", log-prob " << num(lp, 4)
      << ", PPL = " << num(corpus_perplexity(scores), 4) << "\n";
}

}  // namespace moe
