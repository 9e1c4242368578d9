// moe-score experts: runs a checkpoint over text with a GateRecorder (layers/gate_recorder.h) and
// turns the records into per-site statistics (translator/expert_stats.h).
//  - Translation models: teacher forcing on source/target pairs (the targets given, or the model's own
//    greedy/beam hypotheses, see apps/moe-score/model_commands.cpp), in padded batches of --max-tokens. Encoder sites
//    (group "encoder") read the source x </s>; decoder sites (group "decoder") the decoder input <s> y:
//    position t stands for the token fed in there (<s>, y_1, ..., y_n; </s> is never an input).
//  - Language models: the sliding windows of moe-score ppl (data::eval_batches), group "lm"; the
//    instance positions are the scored ones (every stream position once), each standing for the input
//    token read there (</s>, x_1, ..., x_n-1).
// Instances and events (see expert_stats.h for the statistics):
//  - per-sentence gates (MAE records [B, E]): one instance per sentence (row with an instance position);
//    every unit of the sentence is one event for the sentence's argmax expert;
//  - per-token gates ([B, T, E]; MoA, MoE, per-position MAE): one instance per instance position;
//    attribution "argmax": one event (unit, argmax expert) per unit (a word: the argmax of the sum of its
//    pieces' gates); "routed" (top-k routers; MAE sites stay argmax): one event (unit, expert) per routed
//    (piece, slot) pair of the unit.
//  - units: "piece" (vocabulary pieces as the vocabulary spells them) or "word" (SentencePiece pieces
//    joined at the word-boundary mark U+2581, which is dropped; a word vocabulary's pieces are words;
//    specials are words of their own; a word never spans a position that is not an instance).
// The expert choice (options.experts: --mae-inference argmax) runs the passes as the decoder with that choice
// runs: the records stay the gates' probabilities, but the states that later sites see are that model's.
// Covered by tests/translator/experts_command_test.cpp and mae_scoring_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/named_enum.h"
#include "data/vocab.h"
#include "graph/parameters.h"
#include "layers/gate_recorder.h"
#include "models/model.h"
#include "translator/expert_stats.h"

namespace moe {

/// Which experts a PMI event credits: the argmax expert of each unit, or every routed expert (top-k routers).
MOE_NAMED_ENUM(PmiAttribution, argmax, routed)
/// The units PMI counts: vocabulary pieces, or words (pieces joined at SentencePiece's word boundaries).
MOE_NAMED_ENUM(PmiUnit, piece, word)

struct ExpertAnalysisOptions {
  int64_t max_tokens = 4096;          // padded tokens per batch (pairs: max(src, tgt) per pair; LM windows)
  int64_t context = 512, stride = 0;  // LM windows (stride 0 = context / 2)
  DType dtype = DType::f32;           // compute dtype (bf16 on a GPU)
  PmiAttribution attribution = PmiAttribution::argmax;
  PmiUnit unit = PmiUnit::piece;
  std::string model_name = "the model";  // the checkpoint, for messages
  /// MAE sites of the passes (--mae-inference; apps/cli/mae_inference_option.h).
  ExpertChoice experts = ExpertChoice::mixture;
  std::function<void()> after_batch;  // optional: called after each forward pass (moe-score's stop point)
};

/// A PMI token of one row and the positions it covers.
struct TokenUnit {
  std::string text;
  std::vector<int64_t> positions;
};
/// The units of each row of ids [rows, cols] over its positions with mask != 0: one per piece, or
/// (words) pieces joined into words as the file comment says.
std::vector<std::vector<TokenUnit>> token_units(const std::vector<int32_t>& ids, const std::vector<double>& mask,
                                                int64_t rows, int64_t cols, const data::Vocab& vocab, bool words);

/// Accumulates the records of batches into one SiteStats per site.
class ExpertCollector {
 public:
  explicit ExpertCollector(ExpertAnalysisOptions options) : o_(std::move(options)) {}
  /// The records of one forward pass over `tokens` (i32 [B, T], any device) of `group`; `mask` ([B, T],
  /// any numeric dtype and device) marks the positions that are instances; `vocab` spells the tokens.
  void add(const std::string& group, const GateRecorder& recorder, const Tensor& tokens, const Tensor& mask,
           const data::Vocab& vocab);
  /// Per site, ordered by group (encoder, decoder, lm), layer and name.
  std::vector<SiteSummary> summaries(int64_t min_count, int top) const;
  bool empty() const { return sites_.empty(); }
  const ExpertAnalysisOptions& options() const { return o_; }

 private:
  ExpertAnalysisOptions o_;
  std::vector<std::unique_ptr<SiteStats>> sites_;
};

struct ExpertRunInfo {
  int64_t sentences = 0, src_tokens = 0, tgt_tokens = 0, lm_tokens = 0, truncated = 0;
};

/// Both run over everything; a model whose first batch reports no gated site is an error naming the
/// model type and its attention / ffn types.

/// Teacher-forced pass over pairs (token ids without specials; longer ones are cut to the model's
/// positions and counted in `info.truncated`). An encoder-decoder (Model::seq2seq) is required.
ExpertRunInfo collect_pairs(const Model& model, ParameterStore& params, Device device,
                            std::vector<std::vector<int32_t>> src, std::vector<std::vector<int32_t>> tgt,
                            const data::Vocab& src_vocab, const data::Vocab& tgt_vocab, ExpertCollector& out);

/// The LM windows over `stream` (lines' ids each followed by </s>, as lm_stream_of()).
ExpertRunInfo collect_lm(const Model& model, ParameterStore& params, Device device, const std::vector<int32_t>& stream,
                         const data::Vocab& vocab, ExpertCollector& out);

}  // namespace moe
