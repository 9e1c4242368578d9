// Fuzzes moe-serve's request parser (lib/serving/request.cpp): arbitrary bytes as the body of POST
// /v1/translate, /v1/generate and /v1/score. Bad input must be a RequestError (a moe::Error) naming a field, with
// a 4xx status and a JSON error body; an accepted request must hold what the server relies on: 1..max_lines
// lines, each valid UTF-8 of at most max_line_bytes without '\n', 1 <= n_best <= beam <= max_beam, and sampling
// numbers the sampler takes (top-k >= 0, top-p in (0, 1], temperature > 0, seed >= 0), and a fused LM ("lm") only
// with a positive weight (and on pairs, not on a language model's text).
// Seeds: tests/fuzz/seeds/serve_request.
#include <cmath>
#include <nlohmann/json.hpp>

#include "data/utf8.h"
#include "fuzz_support.h"
#include "serving/request.h"

namespace {
const moe::serving::RequestLimits kLimits{.max_lines = 8, .max_line_bytes = 64, .max_beam = 16};

void check_lines(const std::vector<std::string>& lines, bool may_be_empty) {
  FUZZ_REQUIRE(may_be_empty || !lines.empty(), "an accepted request without lines");
  FUZZ_REQUIRE(static_cast<int64_t>(lines.size()) <= kLimits.max_lines, "more lines than --max-lines");
  for (const auto& l : lines) {
    FUZZ_REQUIRE(static_cast<int64_t>(l.size()) <= kLimits.max_line_bytes, "a line past --max-line-bytes");
    FUZZ_REQUIRE(moe::data::is_valid_utf8(l) && l.find('\n') == std::string::npos, "a line with '\\n' or bad UTF-8");
  }
}

void check_lm(const moe::serving::FusedLm& lm) {
  FUZZ_REQUIRE(lm.model.empty() ? lm.weight == 0 : std::isfinite(lm.weight) && lm.weight > 0,
               "a fused LM without a positive weight, or a weight without an LM");
}

void check_search(const moe::BeamOptions& s) {
  FUZZ_REQUIRE(s.n_best >= 1 && s.n_best <= s.beam && s.beam <= kLimits.max_beam, "n_best or beam out of range");
  FUZZ_REQUIRE(s.sampling_topk >= 0 && s.sampling_topp > 0 && s.sampling_topp <= 1 && s.temperature > 0 && s.seed >= 0,
               "a sampling number out of range");
}

template <class Parse, class Check>
void run(std::string_view body, Parse parse, Check check) {
  try {
    check(parse(body, kLimits));
  } catch (const moe::serving::RequestError& e) {
    FUZZ_REQUIRE(e.status() >= 400 && e.status() < 500 && !e.field().empty(), "an error without a 4xx or a field");
    const auto j = nlohmann::json::parse(moe::serving::error_body(e.field(), e.message()));
    FUZZ_REQUIRE(j["error"]["field"].is_string(), "an error body without its field");
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const auto parse_translate = [](std::string_view b, const moe::serving::RequestLimits& l) {
    return moe::serving::parse_translate_request(b, l);  // the default search options
  };
  run(body, parse_translate, [](const moe::serving::TranslateRequest& r) {
    check_lines(r.text, false);
    check_search(r.search);
    check_lm(r.lm);
  });
  const auto parse_generate = [](std::string_view b, const moe::serving::RequestLimits& l) {
    return moe::serving::parse_generate_request(b, l);
  };
  run(body, parse_generate, [](const moe::serving::GenerateRequest& r) {
    check_lines(r.text, false);
    check_search(r.search);
  });
  run(body, moe::serving::parse_score_request, [](const moe::serving::ScoreRequest& r) {
    check_lines(r.text, true);
    check_lines(r.src, true);
    FUZZ_REQUIRE(r.src.size() == r.tgt.size() && (r.text.empty() != r.src.empty()), "pairs unaligned or mixed");
    check_lm(r.lm);
    FUZZ_REQUIRE(r.lm.model.empty() || !r.src.empty(), "a fused LM on a language model's text");
  });
  return 0;
}
