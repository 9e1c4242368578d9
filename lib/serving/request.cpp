// request.h implementation: nlohmann::json parses the body (strictly: UTF-8 is checked, lone surrogates
// refused), then a table per endpoint maps each field to its typed setter (the search fields' setters shared by
// /v1/translate and /v1/generate); a field not in the table is an error listing the known ones. Covered by
// tests/serving/request_test.cpp and tests/fuzz/serve_request.cpp.
#include "serving/request.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/named_enum.h"

namespace moe::serving {

namespace {
using nlohmann::json;

/// The key whose value holds byte `pos` of `body` (the last `"key":` before it), for errors inside a
/// string found while parsing; empty when there is none.
std::string key_before(std::string_view body, size_t pos) {
  pos = std::min(pos, body.size());
  for (size_t colon = body.rfind(':', pos); colon != std::string_view::npos && colon > 0;
       colon = body.rfind(':', colon - 1)) {
    size_t end = colon;
    while (end > 0 && (body[end - 1] == ' ' || body[end - 1] == '\t' || body[end - 1] == '\n')) --end;
    if (end < 2 || body[end - 1] != '"') continue;
    const size_t start = body.rfind('"', end - 2);
    if (start == std::string_view::npos) return {};
    return std::string(body.substr(start + 1, end - start - 2));
  }
  return {};
}

json parse_object(std::string_view body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    what = what.substr(what.find(']') + 2);  // without "[json.exception.parse_error.101] "
    // Inside a string (invalid UTF-8, a control character, a bad escape): name the field holding it.
    const std::string key = what.find("invalid string") != std::string::npos ? key_before(body, e.byte) : "";
    throw RequestError(key.empty() ? "body" : key, "not valid JSON (byte " + std::to_string(e.byte) + "): " + what);
  } catch (const json::exception& e) {  // a number past a double's range (out_of_range 406) carries no position
    const std::string what = e.what();
    throw RequestError("body", "not valid JSON: " + what.substr(what.find(']') + 2));
  }
  if (!j.is_object()) throw RequestError("body", std::string("must be a JSON object, got ") + j.type_name());
  return j;
}

int64_t integer(const json& v, const std::string& field, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) throw RequestError(field, std::string("must be an integer, got ") + v.type_name());
  const bool too_big = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi);
  const int64_t x = too_big ? hi : v.get<int64_t>();
  if (too_big || x < lo || x > hi)
    throw RequestError(field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
  return x;
}

double number(const json& v, const std::string& field, double lo) {
  if (!v.is_number()) throw RequestError(field, std::string("must be a number, got ") + v.type_name());
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo) throw RequestError(field, "must be a finite number >= " + json(lo).dump());
  return x;
}

std::string string(const json& v, const std::string& field) {
  if (!v.is_string()) throw RequestError(field, std::string("must be a string, got ") + v.type_name());
  return v.get<std::string>();
}

/// One of `choices` (an enum's names).
template <class E>
E choice(const json& v, const std::string& field, std::initializer_list<E> allowed) {
  const std::string s = string(v, field);
  std::string names;
  for (E e : allowed) {
    if (enum_name(e) == s) return e;
    names += (names.empty() ? "" : ", ") + enum_name(e);
  }
  throw RequestError(field, "'" + s + "' is not one of " + names);
}

bool boolean(const json& v, const std::string& field) {
  if (!v.is_boolean()) throw RequestError(field, std::string("must be true or false, got ") + v.type_name());
  return v.get<bool>();
}

std::vector<std::string> lines(const json& v, const std::string& field, const RequestLimits& limits) {
  if (!v.is_array()) throw RequestError(field, std::string("must be an array of strings, got ") + v.type_name());
  if (v.empty()) throw RequestError(field, "is empty: give at least one line");
  if (static_cast<int64_t>(v.size()) > limits.max_lines)
    throw RequestError(field,
                       "has " + std::to_string(v.size()) + " lines; at most " + std::to_string(limits.max_lines) +
                           " per request (--max-lines)",
                       413);
  std::vector<std::string> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    out.push_back(string(v[i], f));
    if (static_cast<int64_t>(out.back().size()) > limits.max_line_bytes)
      throw RequestError(f,
                         "has " + std::to_string(out.back().size()) + " bytes; at most " +
                             std::to_string(limits.max_line_bytes) + " (--max-line-bytes)",
                         413);
    if (out.back().find('\n') != std::string::npos)
      throw RequestError(f, "holds a line break: give one sentence per array element");
  }
  return out;
}

template <class R>
using Setter = std::function<void(R&, const json&, const std::string&, const RequestLimits&)>;

template <class R>
using Table = std::vector<std::pair<std::string, Setter<R>>>;

template <class R>
R parse_fields(const json& j, const RequestLimits& limits, const Table<R>& table, R r = {}) {
  for (auto field = j.begin(); field != j.end(); ++field) {
    const std::string& key = field.key();  // not a structured binding: clang 14 cannot capture one
    auto it = std::find_if(table.begin(), table.end(), [&](const auto& e) { return e.first == key; });
    if (it == table.end()) {
      std::string known;
      for (const auto& e : table) known += (known.empty() ? "" : ", ") + e.first;
      if (key.empty()) throw RequestError("body", "a field with an empty name (known: " + known + ")");
      throw RequestError(key, "unknown field (known: " + known + ")");
    }
    it->second(r, field.value(), key, limits);
  }
  return r;
}

/// `rest` after the fields of R's `search` (moe-translate's search options, beam search or sampling) and
/// "word_scores" (what the search scored each token).
template <class R>
Table<R> with_search_fields(Table<R> rest) {
  Table<R> t = {
      {"word_scores",
       [](R& r, const json& v, const std::string& f, const RequestLimits&) { r.word_scores = boolean(v, f); }},
      {"beam", [](R& r, const json& v, const std::string& f,
                  const RequestLimits& l) { r.search.beam = static_cast<int>(integer(v, f, 1, l.max_beam)); }},
      {"n_best", [](R& r, const json& v, const std::string& f,
                    const RequestLimits& l) { r.search.n_best = static_cast<int>(integer(v, f, 1, l.max_beam)); }},
      {"lenpen", [](R& r, const json& v, const std::string& f,
                    const RequestLimits&) { r.search.lenpen = number(v, f, -std::numeric_limits<double>::max()); }},
      {"length_penalty",
       [](R& r, const json& v, const std::string& f, const RequestLimits&) {
         r.search.penalty = choice(v, f, {LengthPenalty::fairseq, LengthPenalty::gnmt});
       }},
      {"max_len_a",
       [](R& r, const json& v, const std::string& f, const RequestLimits&) { r.search.max_len_a = number(v, f, 0.0); }},
      {"max_len_b", [](R& r, const json& v, const std::string& f,
                       const RequestLimits&) { r.search.max_len_b = integer(v, f, 0, 1 << 20); }},
      {"min_len", [](R& r, const json& v, const std::string& f,
                     const RequestLimits&) { r.search.min_len = integer(v, f, 0, 1 << 20); }},
      {"no_repeat_ngram_size", [](R& r, const json& v, const std::string& f,
                                  const RequestLimits&) { r.search.no_repeat_ngram_size = integer(v, f, 0, 1 << 20); }},
      {"unkpen",
       [](R& r, const json& v, const std::string& f, const RequestLimits&) {
         if (!v.is_string()) {
           r.search.unkpen = number(v, f, -std::numeric_limits<double>::max());
           return;
         }
         if (v.get<std::string>() != "inf") throw RequestError(f, "must be a number or \"inf\", got " + v.dump());
         r.search.unkpen = std::numeric_limits<double>::infinity();  // JSON has no infinity
       }},
      {"sampling",
       [](R& r, const json& v, const std::string& f, const RequestLimits&) { r.search.sampling = boolean(v, f); }},
      {"sampling_topk", [](R& r, const json& v, const std::string& f,
                           const RequestLimits&) { r.search.sampling_topk = integer(v, f, 0, 1 << 30); }},
      {"sampling_topp",
       [](R& r, const json& v, const std::string& f, const RequestLimits&) {
         const double p = number(v, f, 0.0);
         if (p == 0 || p > 1) throw RequestError(f, "must be in (0, 1], got " + v.dump());
         r.search.sampling_topp = p;
       }},
      {"temperature",
       [](R& r, const json& v, const std::string& f, const RequestLimits&) {
         const double t = number(v, f, 0.0);
         if (t == 0) throw RequestError(f, "must be > 0, got " + v.dump());
         r.search.temperature = t;
       }},
      {"seed", [](R& r, const json& v, const std::string& f, const RequestLimits&) {
         r.search.seed = integer(v, f, 0, std::numeric_limits<int64_t>::max());
       }}};
  t.insert(t.end(), rest.begin(), rest.end());
  return t;
}

/// Parses `body` with `table` over `defaults`, then checks the search fields across each other: n_best <= beam,
/// and a sampling field the request gives only with sampling on (its own "sampling" or the server's default).
template <class R>
R parse_search_request(std::string_view body, const RequestLimits& limits, const Table<R>& table,
                       const SearchOptions& defaults) {
  const json j = parse_object(body);
  R initial;
  static_cast<SearchOptions&>(initial.search) = defaults;
  R r = parse_fields(j, limits, table, std::move(initial));
  if (r.text.empty()) throw RequestError("text", "is required: an array of lines");
  if (r.search.n_best > r.search.beam)
    throw RequestError("n_best", "is " + std::to_string(r.search.n_best) +
                                     " but must be at most beam = " + std::to_string(r.search.beam));
  for (const std::string& key : sampling_key_names())
    if (!r.search.sampling && key != "sampling" && j.contains(key))
      throw RequestError(key, "applies to sampling only: add \"sampling\": true");
  return r;
}

/// "hard", "soft" or a number in [0, 1] (1 is hard), as moe-translate --alignment takes them.
AlignmentOutput alignment_choice(const json& v, const std::string& f) {
  if (!v.is_string() && !v.is_number())
    throw RequestError(f, std::string("must be \"hard\", \"soft\" or a number in [0, 1], got ") + v.type_name());
  try {
    return AlignmentOutput::parse(v.is_string() ? v.get<std::string>() : v.dump(), f);
  } catch (const Error&) {
    throw RequestError(f, "must be \"hard\", \"soft\" or a number in [0, 1], got " + v.dump());
  }
}

/// Folds "alignment_words" (read after every field, so that the two may come in either order) into the alignment:
/// links between words need an alignment, hard or a threshold.
template <class R>
void apply_alignment_words(R& r) {
  if (!r.alignment_words) return;
  if (!r.alignment) throw RequestError("alignment_words", "applies to word alignments: add \"alignment\"");
  if (r.alignment->kind == AlignmentKind::soft)
    throw RequestError("alignment_words",
                       "needs \"alignment\": \"hard\" or a threshold (a soft alignment is over tokens)");
  r.alignment->words = true;
}

/// `rest` and the "alignment" and "alignment_words" fields of translation and scoring requests.
template <class R>
Table<R> with_alignment_fields(Table<R> rest) {
  rest.push_back({"alignment", [](R& r, const json& v, const std::string& f, const RequestLimits&) {
                    r.alignment = alignment_choice(v, f);
                  }});
  rest.push_back({"alignment_words", [](R& r, const json& v, const std::string& f, const RequestLimits&) {
                    r.alignment_words = boolean(v, f);
                  }});
  return rest;
}

/// `rest` and the "lm" and "lm_weight" fields of translation and scoring requests.
template <class R>
Table<R> with_lm_fields(Table<R> rest) {
  rest.push_back({"lm", [](R& r, const json& v, const std::string& f, const RequestLimits&) {
                    r.lm.model = string(v, f);
                    if (r.lm.model.empty()) throw RequestError(f, "must name a served language model");
                  }});
  rest.push_back({"lm_weight", [](R& r, const json& v, const std::string& f, const RequestLimits&) {
                    r.lm.weight = number(v, f, 0.0);
                    if (r.lm.weight == 0) throw RequestError(f, "must be > 0, got " + v.dump());
                  }});
  return rest;
}

/// "lm" and "lm_weight" come together (as moe-translate's --lm and --lm-weight).
void check_lm_fields(const FusedLm& lm) {
  if (!lm.model.empty() && lm.weight == 0) throw RequestError("lm_weight", "is required with \"lm\"");
  if (lm.model.empty() && lm.weight != 0) throw RequestError("lm", "is required with \"lm_weight\"");
}

ExpertChoice mae_choice(const json& v, const std::string& f) {
  return choice(v, f, {ExpertChoice::mixture, ExpertChoice::argmax});
}
}  // namespace

TranslateRequest parse_translate_request(std::string_view body, const RequestLimits& limits,
                                         const SearchOptions& defaults) {
  using R = TranslateRequest;
  static const Table<R> table = with_search_fields<R>(with_lm_fields<R>(with_alignment_fields<R>(
      {{"text", [](R& r, const json& v, const std::string& f, const RequestLimits& l) { r.text = lines(v, f, l); }},
       {"model", [](R& r, const json& v, const std::string& f, const RequestLimits&) { r.model = string(v, f); }},
       {"mae_inference",
        [](R& r, const json& v, const std::string& f, const RequestLimits&) { r.experts = mae_choice(v, f); }},
       {"prefix",
        [](R& r, const json& v, const std::string& f, const RequestLimits& l) { r.prefix = lines(v, f, l); }}})));
  R r = parse_search_request(body, limits, table, defaults);
  apply_alignment_words(r);
  check_lm_fields(r.lm);
  if (!r.prefix.empty() && r.prefix.size() != r.text.size())
    throw RequestError("prefix", "has " + std::to_string(r.prefix.size()) + " lines but text has " +
                                     std::to_string(r.text.size()) + " (one prefix per line; \"\" forces nothing)");
  return r;
}

GenerateRequest parse_generate_request(std::string_view body, const RequestLimits& limits,
                                       const SearchOptions& defaults) {
  using R = GenerateRequest;
  static const Table<R> table = with_search_fields<R>(
      {{"text", [](R& r, const json& v, const std::string& f, const RequestLimits& l) { r.text = lines(v, f, l); }},
       {"model", [](R& r, const json& v, const std::string& f, const RequestLimits&) { r.model = string(v, f); }}});
  return parse_search_request(body, limits, table, defaults);
}

ScoreRequest parse_score_request(std::string_view body, const RequestLimits& limits) {
  using R = ScoreRequest;
  static const Table<R> table = with_lm_fields<R>(with_alignment_fields<R>(
      {{"src", [](R& r, const json& v, const std::string& f, const RequestLimits& l) { r.src = lines(v, f, l); }},
       {"tgt", [](R& r, const json& v, const std::string& f, const RequestLimits& l) { r.tgt = lines(v, f, l); }},
       {"text", [](R& r, const json& v, const std::string& f, const RequestLimits& l) { r.text = lines(v, f, l); }},
       {"model", [](R& r, const json& v, const std::string& f, const RequestLimits&) { r.model = string(v, f); }},
       {"mae_inference",
        [](R& r, const json& v, const std::string& f, const RequestLimits&) { r.experts = mae_choice(v, f); }},
       {"word_scores",
        [](R& r, const json& v, const std::string& f, const RequestLimits&) { r.word_scores = boolean(v, f); }}}));
  R r = parse_fields(parse_object(body), limits, table);
  apply_alignment_words(r);
  check_lm_fields(r.lm);
  if (!r.text.empty() && (!r.src.empty() || !r.tgt.empty()))
    throw RequestError("text", "give either text (a language model) or src and tgt (a translation model), not both");
  if (!r.text.empty() && r.alignment)
    throw RequestError("alignment", "applies to pairs (src and tgt), not to a language model's text");
  if (!r.text.empty() && r.word_scores)
    throw RequestError("word_scores", "applies to pairs (src and tgt), not to a language model's text");
  if (!r.text.empty() && !r.lm.model.empty())
    throw RequestError("lm", "applies to pairs (src and tgt), not to a language model's text");
  if (r.text.empty() && r.src.empty() && r.tgt.empty())
    throw RequestError("body", "needs src and tgt (a translation model) or text (a language model)");
  if (r.text.empty() && r.src.size() != r.tgt.size())
    throw RequestError("tgt",
                       "has " + std::to_string(r.tgt.size()) + " lines but src has " + std::to_string(r.src.size()));
  return r;
}

std::string error_body(const std::string& field, const std::string& message) {
  return json{{"error", {{"field", field}, {"message", message}}}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace moe::serving
