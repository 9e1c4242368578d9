// Translator: batched beam search with any encoder-decoder (the Decoder interface, models/decoder.h).
// A batch of source sentences is padded into [B, S] ids with a u8 mask, encoded once by
// Decoder::start, and decoded step by step by beam_search (lib/translator/beam_search.h), or with
// search.sampling by sampling_search (sampling_search.h, each input's draws keyed by its tokens), whose
// reorders select, duplicate and drop the rows of the decoder's state (key/value caches). Inputs are batched by a
// budget of padded source tokens, longest first, and results come back in input order. With a shortlist the
// decoder scores only the batch's list (Decoder::restrict_output) and the search runs over its columns. With
// alignment the hypotheses get the model's word alignments (translator/alignment.h).
// Covered by tests/translator/translator_test.cpp and tests/translator/shortlist_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/parameters.h"
#include "models/decoder.h"
#include "translator/beam_search.h"
#include "translator/shortlist.h"

namespace moe {

struct TranslatorOptions {
  BeamOptions search;                            // special ids and max_positions are taken from the model
  int64_t max_tokens = 4096;                     // padded source tokens (with </s>) x beam per batch
  DType dtype = DType::f32;                      // compute dtype of the decoding graphs (f32 or bf16)
  ExpertChoice experts = ExpertChoice::mixture;  // MAE sites of the decoding graphs (--mae-inference)
  dist::Communicator* comm = nullptr;            // a training run's ranks (BLEU validation with expert parallelism)
  /// false: the caller reads only the tokens; greedy search (beam 1) then ranks the model's logits
  /// (Decoder::step_logits, no log-softmax over the vocabulary) and the hypotheses' scores are NaN.
  bool scores = true;
  /// A lexical shortlist (translator/shortlist.h; not owned): each batch scores only its list's target tokens.
  const Shortlist* shortlist = nullptr;
  /// Sets each hypothesis's alignment (translator/alignment.h: one teacher-forced pass per batch after the search).
  bool alignment = false;
};

/// The translator options of the user's decoding options (models/decoding_options.h): the search,
/// max_tokens and the compute dtype.
TranslatorOptions translator_options(const DecodingOptions& o);

/// Batches of input indices: sorted by length (longest first, stable), each batch's
/// count x longest length <= max_tokens (a longer single sentence forms its own batch).
std::vector<std::vector<size_t>> token_batches(const std::vector<int64_t>& lengths, int64_t max_tokens);

class Translator {
 public:
  /// `params` must live on `device`; the model's parameters are read from it by name.
  Translator(const Decoder& decoder, ParameterStore& params, Device device, TranslatorOptions options);

  /// n-best lists for source token sequences (without </s>), in input order. An empty source gives
  /// an empty list (nothing is decoded); a source longer than max_positions - 1 tokens is an error.
  /// `on_batch(sentences, target_tokens)` (optional) runs after each decoded batch (progress reports).
  /// `prefixes` (none, or one per source) force the beginning of each output (target_prefix.h).
  std::vector<std::vector<Hypothesis>> translate(
      const std::vector<std::vector<int32_t>>& sources,
      const std::function<void(int64_t sentences, int64_t target_tokens)>& on_batch = {},
      const TargetPrefixes& prefixes = {}) const;
  /// Decodes `sources` as one batch (no sorting, no splitting; none may be empty), with `prefixes`
  /// (none, or one per source).
  std::vector<std::vector<Hypothesis>> translate_batch(const std::vector<const std::vector<int32_t>*>& sources,
                                                       const TargetPrefixes& prefixes = {}) const;

  const BeamOptions& search_options() const { return o_.search; }
  /// The longest source (without </s>) the model's positions allow.
  int64_t max_source_tokens() const { return decoder_.spec().max_positions - 1; }

 private:
  const Decoder& decoder_;
  ParameterStore& params_;
  Device device_;
  TranslatorOptions o_;
};

}  // namespace moe
