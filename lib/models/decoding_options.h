// The decoding options, declared once for every program that decodes: moe-translate, moe-score (pairs,
// experts, ppl), moe-serve and moe-train's BLEU validation (valid.*, eval.*). One struct with the defaults
// (DecodingOptions) and one key table (decoding_keys(): name, member, help, check) from which the command
// lines' flags (apps/cli/decoding_options.h: `max_len_a` -> --max-len-a), the recipe keys (valid.beam, ...)
// and their --help follow, so that no entry point can have a default or a check of its own. Values are
// parsed once into types: the length penalty and the compute dtype are named enums, the device a
// DeviceChoice (auto until resolved). It lies in lib/models, below both lib/translator and lib/training.
// Covered by tests/translator/decoding_options_test.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/named_enum.h"
#include "config/keys.h"
#include "tensor/device.h"
#include "tensor/dtype.h"

namespace moe {

/// Length normalisation of beam search (translator/beam_search.h): fairseq score / len^lenpen, or GNMT
/// score / ((5 + len) / 6)^lenpen.
MOE_NAMED_ENUM(LengthPenalty, fairseq, gnmt)
/// The compute dtype of inference: f32 everywhere, bf16 on a GPU.
MOE_NAMED_ENUM(ComputeDType, f32, bf16)
DType dtype_of(ComputeDType d);

/// --device: auto (cuda:0 when a GPU is present, not the CUDA emulator's, else the CPU; chosen by
/// resolve()) or a fixed device (cpu, cuda, cuda:N, gpuN).
struct DeviceChoice {
  std::optional<Device> fixed;  // none: auto
  DeviceChoice() = default;
  DeviceChoice(Device d) : fixed(d) {}  // NOLINT: a device is a choice
  /// "auto" or a device's text; an error names `key`.
  static DeviceChoice parse(const std::string& text, const std::string& key);
  Device resolve() const;
  std::string str() const;  // "auto", "cpu", "cuda:1"
  bool operator==(const DeviceChoice& o) const { return fixed == o.fixed; }
};

/// What beam search takes from the user (beam_search.h adds the model's ids and positions).
struct SearchOptions {
  int beam = 5;
  int n_best = 1;       // hypotheses returned per sentence (<= beam)
  double lenpen = 1.0;  // fairseq --lenpen / GNMT alpha
  LengthPenalty penalty = LengthPenalty::fairseq;
  double max_len_a = 0.0;  // max output tokens = min(a * src_len + b, max_positions - 1)
  int64_t max_len_b = 200;
  int64_t min_len = 1;  // fewest output tokens before </s> may be chosen
  int64_t no_repeat_ngram_size = 0;  // > 0: no n-gram of this size twice in an output (translator/repeated_ngrams.h)
  double unkpen = 0.0;  // subtracted from <unk>'s log-prob at each free step; inf: never (translator/unk_penalty.h)
  // Sampling instead of beam search (translator/sampling_search.h; fairseq --sampling): `beam` independent samples
  // per input, each token drawn from the model's distribution at `temperature`, restricted to the `sampling_topk`
  // most probable tokens (0: all) and then to the smallest set whose probability reaches `sampling_topp` (1: all).
  bool sampling = false;
  int64_t sampling_topk = 0;
  double sampling_topp = 1.0;
  double temperature = 1.0;
  int64_t seed = 1;  // with the input's tokens, decides the draws (the same input and seed: the same samples)
  bool operator==(const SearchOptions&) const = default;
};

struct DecodingOptions {
  SearchOptions search;
  int64_t max_tokens = 0;  // padded tokens per batch (translating: source tokens x beam); 0 = auto, see below
  DeviceChoice device;
  ComputeDType dtype = ComputeDType::f32;
  bool operator==(const DecodingOptions&) const = default;
};

/// The automatic batch (max_tokens 0): 4,096 padded tokens, and translating, 4,096 source tokens x beam but
/// at most 16,384 hypotheses' tokens. Measured on the CPU (docs/PERF.md, "The default batch of beam search"):
/// at beam 5 the larger batch decodes 10-24% faster in f32 and still holds less memory than CTranslate2's
/// 4,096 source tokens; greedy search gains nothing from more than 4,096.
inline constexpr int64_t kAutoBatchTokens = 4096, kAutoHypothesisTokens = 16384;
/// The padded tokens of a scoring batch (pairs, LM windows, validation loss): max_tokens, or 4,096 when auto.
int64_t scoring_batch_tokens(const DecodingOptions& o);
/// The hypotheses' tokens of a translation batch (source tokens x beam): max_tokens, or when auto
/// min(4,096 x beam, 16,384).
int64_t translation_batch_tokens(const DecodingOptions& o);

/// The one key table: beam, n_best, lenpen, length_penalty, max_len_a, max_len_b, min_len, no_repeat_ngram_size,
/// unkpen, sampling, sampling_topk, sampling_topp, temperature, seed, max_tokens, device, dtype. Each entry point
/// declares the subset it uses, under its own names (flags or section).
const config::Keys<DecodingOptions>& decoding_keys();
/// The search keys (beam .. unkpen): what a program that decodes but does not batch or place takes.
const std::vector<std::string>& search_key_names();
/// The sampling keys: sampling, then the numbers that apply to sampling only (sampling_topk .. seed).
const std::vector<std::string>& sampling_key_names();
/// The search keys of a program that uses the best hypothesis only (BLEU validation, moe-score experts):
/// all but n_best.
std::vector<std::string> best_hypothesis_search_keys();

/// How an entry point names the keys in its errors: "--n-best" on a command line, "valid.n_best" in a recipe.
struct KeyNaming {
  std::string section;  // "" with flags
  bool flags = false;
  std::string operator()(const std::string& key) const;
};

/// The check across keys: n_best <= beam; the error names both keys as `name` does.
void check_decoding_options(const DecodingOptions& o, const KeyNaming& name);

struct Placement {
  Device device;
  DType dtype = DType::f32;
};
/// The device (auto resolved) and the compute dtype of `o`; bf16 without a GPU is an error naming the keys.
Placement decoding_placement(const DecodingOptions& o, const KeyNaming& name);

}  // namespace moe
