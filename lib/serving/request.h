// The requests of moe-serve's JSON API (docs/SERVING.md), parsed once into typed structs at the edge:
// POST /v1/translate {"text": [...], the search fields, "mae_inference", "model", "prefix"}, POST /v1/generate
// {"text": [prompts], the search fields, "model"} (a language model) and POST /v1/score {"src": [...], "tgt":
// [...]} (a translation model) or {"text": [...]} (a language model). The search fields are moe-translate's
// options: "beam", "n_best", "lenpen", "length_penalty", "max_len_a", "max_len_b", "min_len",
// "no_repeat_ngram_size", "unkpen" (a number or "inf"), "sampling", "sampling_topk", "sampling_topp", "temperature",
// "seed". /v1/translate's "alignment" ("hard", "soft" or a threshold in [0, 1]) asks for each output's word
// alignment (moe-translate --alignment), /v1/score's for each pair's (moe-score pairs --alignment), and
// "alignment_words": true for its links between words (--alignment-words; not with "soft"); /v1/translate's and
// /v1/generate's "word_scores": true for each output's token log-probs (--word-scores; /v1/score's: each pair's
// target tokens'). /v1/translate's and /v1/score's (pairs') "lm" names a served causal language model to fuse in
// with weight "lm_weight" > 0 (moe-translate --lm / --lm-weight; each needs the other). A field left out takes the
// server's default: moe-serve's search flags, whose defaults are moe-translate's (models/decoding_options.h).
// Anything a client may get wrong is a RequestError naming the field ("text[3]", "beam", "body"): bad JSON (with
// its byte offset), invalid UTF-8, a wrong type, an unknown field, a value out of range, too many lines or too long
// a line. Covered by tests/serving/request_test.cpp and tests/fuzz/serve_request.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "layers/build_context.h"
#include "translator/alignment.h"
#include "translator/beam_search.h"

namespace moe::serving {

struct RequestLimits {
  int64_t max_lines = 256;        // lines (or pairs) per request
  int64_t max_line_bytes = 4096;  // bytes of one line
  int max_beam = 64;              // beam sizes above it are refused (memory)
};

/// A request the server refuses: the HTTP status (400 unless said), the field at fault and why.
class RequestError : public Error {
 public:
  RequestError(std::string field, const std::string& message, int status = 400)
      : Error(field + ": " + message), field_(std::move(field)), message_(message), status_(status) {}
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }
  int status() const { return status_; }

 private:
  std::string field_, message_;
  int status_;
};

/// A served language model fused into a translation's search or a pair's score ("lm", "lm_weight").
struct FusedLm {
  std::string model;  // its served name; empty: none
  double weight = 0;  // > 0 when a model is named
};

struct TranslateRequest {
  std::string model;  // a served model's name; empty: the first
  std::vector<std::string> text;
  std::vector<std::string> prefix;  // none, or one target prefix per line, "" none (moe-translate --prefix)
  BeamOptions search;               // beam, n_best, lenpen, penalty, max_len_a / b, min_len (special ids: the model's)
  ExpertChoice experts = ExpertChoice::mixture;  // MAE models (moe-translate --mae-inference)
  std::optional<AlignmentOutput> alignment;      // set: each output's word alignment (moe-translate --alignment)
  bool alignment_words = false;                  // the field as given; the parser sets alignment->words from it
  bool word_scores = false;                      // each output's token log-probs (moe-translate --word-scores)
  FusedLm lm;                                    // a language model fused in (moe-translate --lm, --lm-weight)
};

/// Prompts for a causal language model to continue (moe-generate's options).
struct GenerateRequest {
  std::string model;
  std::vector<std::string> text;  // prompts; "" generates a sentence from its start
  BeamOptions search;             // max_len_a / b count the new tokens (a * prompt tokens + b)
  bool word_scores = false;       // each continuation's new token log-probs (moe-generate --word-scores)
};

struct ScoreRequest {
  std::string model;
  std::vector<std::string> src, tgt;  // a translation model: log P(tgt[i] | src[i]) (forced decoding)
  std::vector<std::string> text;      // a language model: the perplexity of running text
  ExpertChoice experts = ExpertChoice::mixture;
  std::optional<AlignmentOutput> alignment;  // pairs: each pair's word alignment (moe-score pairs --alignment)
  bool alignment_words = false;              // the field as given; the parser sets alignment->words from it
  bool word_scores = false;                  // pairs: each target token's log-prob (moe-score pairs --word-scores)
  FusedLm lm;                                // pairs: a language model fused in (moe-score pairs --lm, --lm-weight)
};

/// `defaults`: the search options of the fields the request leaves out.
TranslateRequest parse_translate_request(std::string_view body, const RequestLimits& limits,
                                         const SearchOptions& defaults = {});
GenerateRequest parse_generate_request(std::string_view body, const RequestLimits& limits,
                                       const SearchOptions& defaults = {});
ScoreRequest parse_score_request(std::string_view body, const RequestLimits& limits);

/// The JSON body of an error response: {"error": {"field": ..., "message": ...}}.
std::string error_body(const std::string& field, const std::string& message);

}  // namespace moe::serving
