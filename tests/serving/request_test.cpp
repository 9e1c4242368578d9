// Parsing moe-serve's requests (lib/serving/request.h): defaults equal moe-translate's (or the server's), every
// option read (sampling's, /v1/generate's and a fused language model's too), and each kind of bad input refused with
// the field named and the right status.
#include "serving/request.h"

#include <catch2/catch.hpp>
#include <limits>

using namespace moe;
using namespace moe::serving;

namespace {
enum class Endpoint { translate, score, generate };

/// The field and status of the RequestError that parsing `body` throws (fails when none is thrown).
std::pair<std::string, int> refusal(const std::string& body, Endpoint endpoint = Endpoint::translate,
                                    const SearchOptions& defaults = {}) {
  RequestLimits limits;
  limits.max_lines = 3;
  limits.max_line_bytes = 10;
  try {
    if (endpoint == Endpoint::score)
      parse_score_request(body, limits);
    else if (endpoint == Endpoint::generate)
      parse_generate_request(body, limits, defaults);
    else
      parse_translate_request(body, limits, defaults);
  } catch (const RequestError& e) {
    return {e.field(), e.status()};
  }
  FAIL("accepted: " << body);
  return {};
}
}  // namespace

TEST_CASE("a translate request takes moe-translate's defaults and every option", "[serving]") {
  const TranslateRequest d = parse_translate_request(R"({"text": ["ein Haus", ""]})", {});
  CHECK(d.text == std::vector<std::string>{"ein Haus", ""});
  const BeamOptions defaults;
  CHECK(d.search.beam == defaults.beam);
  CHECK(d.search.n_best == defaults.n_best);
  CHECK(d.search.lenpen == defaults.lenpen);
  CHECK(d.search.max_len_b == defaults.max_len_b);
  CHECK(d.experts == ExpertChoice::mixture);
  CHECK(d.model.empty());
  CHECK(d.prefix.empty());
  CHECK_FALSE(d.alignment.has_value());
  const TranslateRequest r = parse_translate_request(
      R"({"text": ["a"], "beam": 4, "n_best": 4, "lenpen": 0.6, "length_penalty": "gnmt", "max_len_a": 1.5,
          "max_len_b": 7, "min_len": 0, "no_repeat_ngram_size": 3, "unkpen": 2.5, "mae_inference": "argmax", "model": "de",
          "prefix": ["x y"]})",
      {});
  CHECK(r.search.beam == 4);
  CHECK(r.search.n_best == 4);
  CHECK(r.search.lenpen == 0.6);
  CHECK(r.search.penalty == LengthPenalty::gnmt);
  CHECK(r.search.max_len_a == 1.5);
  CHECK(r.search.max_len_b == 7);
  CHECK(r.search.min_len == 0);
  CHECK(r.search.no_repeat_ngram_size == 3);
  CHECK(r.search.unkpen == 2.5);
  CHECK(parse_translate_request(R"({"text": ["a"], "unkpen": "inf"})", {}).search.unkpen ==
        std::numeric_limits<double>::infinity());
  CHECK(r.experts == ExpertChoice::argmax);
  CHECK(r.model == "de");
  CHECK(r.prefix == std::vector<std::string>{"x y"});
  const auto alignment = [](const std::string& value) {
    return parse_translate_request(R"({"text": ["a"], "alignment": )" + value + "}", {}).alignment;
  };
  CHECK(alignment(R"("hard")") == AlignmentOutput{});
  CHECK(alignment(R"("soft")") == AlignmentOutput{AlignmentKind::soft, 0});
  CHECK(alignment("0.25") == AlignmentOutput{AlignmentKind::threshold, 0.25f});
  CHECK(alignment(R"("0.25")") == AlignmentOutput{AlignmentKind::threshold, 0.25f});
  CHECK(alignment("1") == AlignmentOutput{});
  CHECK(parse_translate_request(R"({"text": ["a"], "word_scores": true})", {}).word_scores);
  CHECK_FALSE(parse_translate_request(R"({"text": ["a"]})", {}).word_scores);
  CHECK(parse_generate_request(R"({"text": ["a"], "word_scores": true})", {}).word_scores);
  AlignmentOutput words;
  words.words = true;
  CHECK(alignment(R"("hard", "alignment_words": true)") == words);
  CHECK(alignment(R"("hard", "alignment_words": false)") == AlignmentOutput{});
  // in either order
  CHECK(parse_translate_request(R"({"alignment_words": true, "text": ["a"], "alignment": 0.5})", {}).alignment ==
        AlignmentOutput{AlignmentKind::threshold, 0.5f, true});
}

TEST_CASE("bad translate requests name their field", "[serving]") {
  using P = std::pair<std::string, int>;
  CHECK(refusal(R"({"text": ["a"])") == P{"body", 400});                    // truncated
  CHECK(refusal(R"({"text": ["a"], "lenpen": 1e309})") == P{"body", 400});  // past a double (found by fuzzing)
  CHECK(refusal("[1]") == P{"body", 400});                                  // not an object
  CHECK(refusal("{\"text\": [\"a\xff\"]}") == P{"text", 400});              // invalid UTF-8
  CHECK(refusal(R"({"text": ["\ud800"]})") == P{"text", 400});              // a lone surrogate
  CHECK(refusal(R"({"text": ["a"], "colour": 1})") == P{"colour", 400});    // unknown field
  CHECK(refusal(R"({"text": ["a"], "no_repeat_ngram_size": -1})") == P{"no_repeat_ngram_size", 400});
  CHECK(refusal(R"({"text": ["a"], "unkpen": "never"})") == P{"unkpen", 400});
  CHECK(refusal(R"({"text": ["a"], "": 1})") == P{"body", 400});            // an empty key (found by fuzzing)
  CHECK(refusal(R"({"text": []})") == P{"text", 400});
  CHECK(refusal(R"({"beam": 2})") == P{"text", 400});  // no text
  CHECK(refusal(R"({"text": "a"})") == P{"text", 400});
  CHECK(refusal(R"({"text": ["a", 3]})") == P{"text[1]", 400});
  CHECK(refusal(R"({"text": ["a\nb"]})") == P{"text[0]", 400});
  CHECK(refusal(R"({"text": ["a", "b", "c", "d"]})") == P{"text", 413});  // --max-lines 3
  CHECK(refusal(R"({"text": ["a", "0123456789x"]})") == P{"text[1]", 413});
  CHECK(refusal(R"({"text": ["a"], "beam": 2, "n_best": 3})") == P{"n_best", 400});
  CHECK(refusal(R"({"text": ["a"], "beam": 0})") == P{"beam", 400});
  CHECK(refusal(R"({"text": ["a"], "beam": 65})") == P{"beam", 400});
  CHECK(refusal(R"({"text": ["a"], "beam": 18446744073709551615})") == P{"beam", 400});
  CHECK(refusal(R"({"text": ["a"], "beam": 2.5})") == P{"beam", 400});
  CHECK(refusal(R"({"text": ["a"], "lenpen": "x"})") == P{"lenpen", 400});
  CHECK(refusal(R"({"text": ["a"], "max_len_a": -1})") == P{"max_len_a", 400});
  CHECK(refusal(R"({"text": ["a"], "length_penalty": "x"})") == P{"length_penalty", 400});
  CHECK(refusal(R"({"text": ["a"], "mae_inference": "sample"})") == P{"mae_inference", 400});
  CHECK(refusal(R"({"text": ["a"], "prefix": ["b", "c"]})") == P{"prefix", 400});  // not one per line
  CHECK(refusal(R"({"text": ["a", "b"], "prefix": ["c"]})") == P{"prefix", 400});
  CHECK(refusal(R"({"text": ["a"], "prefix": "b"})") == P{"prefix", 400});
  CHECK(refusal(R"({"text": ["a"], "prefix": [1]})") == P{"prefix[0]", 400});
  CHECK(refusal(R"({"text": ["a"], "prefix": ["0123456789x"]})") == P{"prefix[0]", 413});
  for (const char* bad : {"1.5", "-0.1", R"("firm")", "true", "[1]", "null"})
    CHECK(refusal(std::string(R"({"text": ["a"], "alignment": )") + bad + "}") == P{"alignment", 400});
  CHECK(refusal(R"({"text": ["a"], "alignment_words": true})") == P{"alignment_words", 400});  // no alignment
  CHECK(refusal(R"({"text": ["a"], "alignment": "soft", "alignment_words": true})") == P{"alignment_words", 400});
  CHECK(refusal(R"({"text": ["a"], "alignment": "hard", "alignment_words": 1})") == P{"alignment_words", 400});
  CHECK(refusal(R"({"text": ["a"], "word_scores": "yes"})") == P{"word_scores", 400});
  // a fused language model: a name and a positive weight, each with the other
  const TranslateRequest fused = parse_translate_request(R"({"text": ["a"], "lm_weight": 0.25, "lm": "de"})", {});
  CHECK(fused.lm.model == "de");
  CHECK(fused.lm.weight == 0.25);
  CHECK(parse_translate_request(R"({"text": ["a"]})", {}).lm.model.empty());
  CHECK(refusal(R"({"text": ["a"], "lm": "de"})") == P{"lm_weight", 400});
  CHECK(refusal(R"({"text": ["a"], "lm_weight": 0.2})") == P{"lm", 400});
  CHECK(refusal(R"({"text": ["a"], "lm": "", "lm_weight": 0.2})") == P{"lm", 400});
  CHECK(refusal(R"({"text": ["a"], "lm": 3, "lm_weight": 0.2})") == P{"lm", 400});
  for (const char* bad : {"0", "-0.5", R"("0.2")", "null"})
    CHECK(refusal(std::string(R"({"text": ["a"], "lm": "de", "lm_weight": )") + bad + "}") == P{"lm_weight", 400});
  CHECK(refusal(R"({"text": ["a"], "lm": "de", "lm_weight": 0.2})", Endpoint::generate) == P{"lm", 400});
}

TEST_CASE("translate and generate requests take the sampling options, with sampling on only", "[serving]") {
  const char* body =
      R"({"text": ["a"], "sampling": true, "sampling_topk": 10, "sampling_topp": 0.9, "temperature": 0.7, "seed": 42,
          "beam": 3, "n_best": 2})";
  for (const BeamOptions& s : {parse_translate_request(body, {}).search, parse_generate_request(body, {}).search}) {
    CHECK(s.sampling);
    CHECK(s.sampling_topk == 10);
    CHECK(s.sampling_topp == 0.9);
    CHECK(s.temperature == 0.7);
    CHECK(s.seed == 42);
    CHECK(s.beam == 3);
    CHECK(s.n_best == 2);
  }
  SearchOptions sampling_server;  // moe-serve --sampling --temperature 0.5: requests sample unless they say not
  sampling_server.sampling = true;
  sampling_server.temperature = 0.5;
  const TranslateRequest d = parse_translate_request(R"({"text": ["a"], "seed": 7})", {}, sampling_server);
  CHECK(d.search.sampling);
  CHECK(d.search.temperature == 0.5);
  CHECK(d.search.seed == 7);
  CHECK_FALSE(parse_translate_request(R"({"text": ["a"], "sampling": false})", {}, sampling_server).search.sampling);
  using P = std::pair<std::string, int>;
  for (Endpoint e : {Endpoint::translate, Endpoint::generate}) {
    CHECK(refusal(R"({"text": ["a"], "sampling": "yes"})", e) == P{"sampling", 400});
    CHECK(refusal(R"({"text": ["a"], "sampling": true, "sampling_topk": -1})", e) == P{"sampling_topk", 400});
    CHECK(refusal(R"({"text": ["a"], "sampling": true, "sampling_topp": 0})", e) == P{"sampling_topp", 400});
    CHECK(refusal(R"({"text": ["a"], "sampling": true, "sampling_topp": 1.5})", e) == P{"sampling_topp", 400});
    CHECK(refusal(R"({"text": ["a"], "sampling": true, "temperature": 0})", e) == P{"temperature", 400});
    CHECK(refusal(R"({"text": ["a"], "sampling": true, "seed": -1})", e) == P{"seed", 400});
    // a sampling number without sampling would be ignored: refused, as moe-translate refuses it
    CHECK(refusal(R"({"text": ["a"], "temperature": 0.5})", e) == P{"temperature", 400});
    CHECK(refusal(R"({"text": ["a"], "sampling_topk": 5})", e) == P{"sampling_topk", 400});
    CHECK(refusal(R"({"text": ["a"], "sampling": false, "seed": 3})", e, sampling_server) == P{"seed", 400});
  }
}

TEST_CASE("a generate request holds prompts and the search options", "[serving]") {
  SearchOptions server;
  server.beam = 1;
  server.max_len_b = 20;
  const GenerateRequest g =
      parse_generate_request(R"({"text": ["a man", ""], "model": "lm", "max_len_b": 5})", {}, server);
  CHECK(g.text == std::vector<std::string>{"a man", ""});
  CHECK(g.model == "lm");
  CHECK(g.search.beam == 1);  // the server's default
  CHECK(g.search.max_len_b == 5);
  using P = std::pair<std::string, int>;
  CHECK(refusal(R"({"max_len_b": 5})", Endpoint::generate) == P{"text", 400});
  CHECK(refusal(R"({"text": []})", Endpoint::generate) == P{"text", 400});
  CHECK(refusal(R"({"text": ["a"], "prefix": ["b"]})", Endpoint::generate) == P{"prefix", 400});  // translate's only
  CHECK(refusal(R"({"text": ["a"], "mae_inference": "argmax"})", Endpoint::generate) == P{"mae_inference", 400});
  CHECK(refusal(R"({"text": ["a"], "beam": 2, "n_best": 3})", Endpoint::generate) == P{"n_best", 400});
  CHECK(refusal(R"({"text": ["a", "b", "c", "d"]})", Endpoint::generate) == P{"text", 413});
}

TEST_CASE("a score request holds pairs or LM text", "[serving]") {
  const ScoreRequest p = parse_score_request(R"({"src": ["a", "b"], "tgt": ["x", "y"]})", {});
  CHECK(p.src.size() == 2);
  CHECK(p.tgt.size() == 2);
  CHECK(parse_score_request(R"({"text": ["a b c"]})", {}).text.size() == 1);
  CHECK_FALSE(p.alignment.has_value());
  CHECK(parse_score_request(R"({"src": ["a"], "tgt": ["x"], "alignment": 0.3})", {}).alignment ==
        AlignmentOutput{AlignmentKind::threshold, 0.3f});
  CHECK(parse_score_request(R"({"src": ["a"], "tgt": ["x"], "alignment": "hard", "alignment_words": true})", {})
            .alignment == AlignmentOutput{AlignmentKind::hard, 1, true});
  using P = std::pair<std::string, int>;
  CHECK(refusal(R"({"src": ["a"]})", Endpoint::score) == P{"tgt", 400});
  CHECK(refusal(R"({"src": ["a"], "tgt": ["x", "y"]})", Endpoint::score) == P{"tgt", 400});
  CHECK(refusal(R"({"text": ["a"], "src": ["a"], "tgt": ["b"]})", Endpoint::score) == P{"text", 400});
  CHECK(refusal(R"({})", Endpoint::score) == P{"body", 400});
  CHECK(refusal(R"({"beam": 3, "text": ["a"]})", Endpoint::score) == P{"beam", 400});
  CHECK(refusal(R"({"text": ["a"], "alignment": "hard"})", Endpoint::score) == P{"alignment", 400});  // an LM's text
  CHECK(refusal(R"({"src": ["a"], "tgt": ["x"], "alignment": "firm"})", Endpoint::score) == P{"alignment", 400});
  CHECK(refusal(R"({"src": ["a"], "tgt": ["x"], "alignment_words": true})", Endpoint::score) ==
        P{"alignment_words", 400});
  CHECK(parse_score_request(R"({"src": ["a"], "tgt": ["x"], "word_scores": true})", {}).word_scores);
  CHECK(refusal(R"({"text": ["a"], "word_scores": true})", Endpoint::score) == P{"word_scores", 400});  // an LM's
  CHECK(parse_score_request(R"({"src": ["a"], "tgt": ["x"], "lm": "de", "lm_weight": 1})", {}).lm.weight == 1);
  CHECK(refusal(R"({"text": ["a"], "lm": "de", "lm_weight": 1})", Endpoint::score) == P{"lm", 400});  // an LM's
  CHECK(refusal(R"({"src": ["a"], "tgt": ["x"], "lm": "de"})", Endpoint::score) == P{"lm_weight", 400});
}

TEST_CASE("error bodies are JSON even for invalid UTF-8", "[serving]") {
  CHECK(error_body("text", "bad \xff byte") ==
        "{\"error\":{\"field\":\"text\",\"message\":\"bad \xEF\xBF\xBD byte\"}}");
}
