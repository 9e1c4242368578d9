// Sampling search over any incremental scorer (fairseq's --sampling): each input gets `beam` samples, each a
// sequence of tokens drawn one step at a time (translator/token_sampler.h: temperature, top-k, top-p) from the
// scorer's log-probabilities, until </s> or the input's maximum length (then </s> is forced, as beam search forces
// it). <pad> and <s> are never drawn, nor </s> before min_len tokens; forced target prefixes (target_prefix.h)
// are followed token by token. A sample's log_prob sums the model's log-probabilities of its tokens and </s> (at
// temperature 1, whatever the sampling temperature: what moe-score pairs reports for it), its score is that
// normalised by the length penalty, and the n_best best samples by score are returned, best first.
// The draws: sample j of an input at step t takes Philox's block t * beam + j of stream `streams[s]` under `seed`
// (two of its lanes: a uniform number of 48 bits), and the translator makes an input's stream from its tokens
// (sample_stream), so an input's samples do not depend on the batch it is decoded in or on the other inputs. The rows
// are laid out as beam search's (beam rows per active input after the first step; a finished sample's row is a filler
// fed <pad> until its input's last sample ends), so the scorer's reorders are the same. The log-probabilities are read
// on the host (an [N, V] copy per step from a GPU), and a step's draws run over the CPU threads. Covered by
// tests/translator/sampling_search_test.cpp and tests/translator/translator_test.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "translator/beam_search.h"

namespace moe {

/// The stream of an input's draws: a 64-bit FNV-1a hash of its token ids.
uint64_t sample_stream(const std::vector<int32_t>& source);

/// Samples for all inputs at once (beam_search's arguments, and one stream per input); per input up to n_best
/// samples, best score first (fewer only when the scorer gave -inf to every token a sample could take).
std::vector<std::vector<Hypothesis>> sampling_search(const std::vector<int64_t>& src_lengths,
                                                     const std::vector<uint64_t>& streams, const StepFn& step,
                                                     const ReorderFn& reorder, const BeamOptions& options,
                                                     const TargetPrefixes& prefixes = {});

/// beam_search, or sampling_search when options.sampling, with each input's stream made from `inputs[s]`'s tokens
/// (what the draws of input s are keyed by: its source, or a language model's prompt).
std::vector<std::vector<Hypothesis>> run_search(const std::vector<int64_t>& src_lengths,
                                                const std::vector<const std::vector<int32_t>*>& inputs,
                                                const StepFn& step, const ReorderFn& reorder,
                                                const BeamOptions& options, const TargetPrefixes& prefixes = {});

}  // namespace moe
