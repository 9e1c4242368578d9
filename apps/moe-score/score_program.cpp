// score_program.h implementation: the subcommand table. A new subcommand adds its own file and one
// line here. Covered by tests/metrics/score_cli_test.cpp and tests/translator/scoring_test.cpp.
#include "moe-score/score_program.h"

#include "common/error.h"
#include "moe-score/aer_command.h"
#include "moe-score/metric_commands.h"
#include "moe-score/model_commands.h"
#include "moe-score/sentences_command.h"

namespace moe {

namespace {
const std::vector<cli::Subcommand>& entries() {
  static const std::vector<cli::Subcommand> table = {
      {"bleu", "corpus BLEU exactly as sacreBLEU 2.x (default: 13a tokenizer, exp smoothing)", metrics::setup_bleu},
      {"chrf", "chrF (chrF2; --chrf-word-order 2 for chrF++) exactly as sacreBLEU 2.x", metrics::setup_chrf},
      {"aer", "alignment error rate of word alignments against gold sure / possible links", metrics::setup_aer},
      {"ppl", "perplexity of a language model (sliding windows: --context, --stride)", setup_ppl},
      {"pairs", "log-probabilities of given translations (--src, --tgt) and their perplexity", setup_pairs},
      {"sentences", "log-probability of each line as a sentence of a language model (Marian's scorer's)",
       setup_sentences},
      {"experts",
       "expert usage of MAE / MoA / MoE sites: gate entropy, argmax and routed shares, load balance, tokens by "
       "PMI per expert",
       setup_experts},
  };
  return table;
}
}  // namespace

cli::SubcommandTable score_table() {
  return cli::SubcommandTable(
      "moe-score", "moe-score: evaluation metrics (BLEU and chrF as sacreBLEU computes them) and model scores",
      entries());
}

const cli::Subcommand& score_table_entry(const std::string& name) {
  for (const auto& e : entries())
    if (e.name == name) return e;
  MOE_FAIL("moe-score has no subcommand '", name, "'");
}

int score_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  return score_table().run(argv, out, err);
}

}  // namespace moe
