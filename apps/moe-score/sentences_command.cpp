// sentences_command.h implementation. Covered by tests/translator/sentence_scores_test.cpp.
#include "moe-score/sentences_command.h"

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/mae_inference_option.h"
#include "metrics/read_lines.h"
#include "models/inference_weights.h"
#include "moe-score/model_options.h"
#include "translator/stepwise_scores.h"

namespace moe {

namespace {
struct SentencesArgs {
  ModelOptions m;
  std::string input = "-";
  PairScoreOptions opt;
  bool summary = false, word_scores = false;
};
}  // namespace

cli::SubcommandRunner setup_sentences(CLI::App& sub) {
  auto a = std::make_shared<SentencesArgs>();
  add_model_options(sub, a->m, false, {"max_tokens"});
  sub.get_option("--max-tokens")->description("padded tokens per batch");
  sub.add_option("-i,--input", a->input, "sentences, one per line ('-' = stdin)")->capture_default_str();
  CLI::Option* summary = sub.add_flag("--summary", a->summary, "print only the corpus summary (on stdout)");
  sub.add_flag("--word-scores", a->word_scores,
               "write each token's log-probability (natural log, </s>'s last; they sum to the line's) as a third "
               "field")
      ->excludes(summary);
  cli::add_mae_inference_option(sub, a->opt.experts);
  return [a](std::ostream& out, std::ostream& err) {  // step by step: no gate sees a later token
    const auto [device, dtype] = placement(a->m, "sentences");
    a->opt.dtype = dtype;
    a->opt.max_tokens = scoring_batch_tokens(a->m.decoding);
    a->opt.after_batch = stop_points("sentences");
    LoadedCheckpoint ck = load_checkpoint(a->m.model(), device);
    const InferenceWeights weights(ck, a->m.quantize, device);
    const Decoder* lm = ck.model->is_language_model() ? ck.model->decoder() : nullptr;
    MOE_CHECK(lm, "'", a->m.model(), "' holds a ", ck.model->type(),
              " model, not a causal language model (transformer_lm, lstm_lm); use moe-score pairs for translations");
    const auto lines = encode_lines(metrics::read_lines(a->input), ck.first_vocab({"lm", "tgt", "src"}));
    const std::vector<std::vector<int32_t>> none(lines.size());  // a language model reads no source
    const auto scores = score_pairs_stepwise(*lm, *ck.params, device, none, lines, a->opt);
    write_score_lines(
        out, err, scores,
        {.cmd = "sentences", .summary = a->summary, .word_scores = a->word_scores, .model = a->m.model()});
    return 0;
  };
}

}  // namespace moe
