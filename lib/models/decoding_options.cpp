// decoding_options.h implementation: the key table of the decoding options (help, checks) and the
// checks across keys. Covered by tests/translator/decoding_options_test.cpp.
#include "models/decoding_options.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace moe {

DType dtype_of(ComputeDType d) { return d == ComputeDType::bf16 ? DType::bf16 : DType::f32; }

DeviceChoice DeviceChoice::parse(const std::string& text, const std::string& key) {
  if (text == "auto") return {};
  try {
    return Device::parse(text);
  } catch (const Error& e) {
    MOE_FAIL(key, ": ", e.what());
  }
}

Device DeviceChoice::resolve() const { return fixed ? *fixed : Device::parse("auto"); }

std::string DeviceChoice::str() const { return fixed ? fixed->str() : "auto"; }

const config::Keys<DecodingOptions>& decoding_keys() {
  using config::above;
  using config::at_least;
  using D = DecodingOptions;
  using S = SearchOptions;
  static const config::Keys<D> keys = [] {
    config::Keys<D> k("the decoding options");
    k.add("beam", &D::search, &S::beam, "beam size (1 = greedy)", above(0))
        .add("n_best", &D::search, &S::n_best, "hypotheses per input (at most beam)", above(0))
        .add("lenpen", &D::search, &S::lenpen, "length penalty exponent (score / len^lenpen; GNMT alpha)")
        .add("length_penalty", &D::search, &S::penalty,
             "length normalisation: fairseq score / len^lenpen, gnmt score / ((5+len)/6)^lenpen")
        .add("max_len_a", &D::search, &S::max_len_a, "max output tokens = a * source tokens + b", at_least(0.0))
        .add("max_len_b", &D::search, &S::max_len_b, "max output tokens = a * source tokens + b", at_least<int64_t>(0))
        .add("min_len", &D::search, &S::min_len, "fewest output tokens before </s>", at_least<int64_t>(0))
        .add("no_repeat_ngram_size", &D::search, &S::no_repeat_ngram_size,
             "no n-gram of this size twice in an output (0 = off; fairseq --no-repeat-ngram-size)",
             at_least<int64_t>(0))
        .add_custom(
            "unkpen", config::ValueType::Float,
            "unknown-word penalty: subtracted from <unk>'s log-probability at every step (fairseq --unkpen; "
            "inf = never output <unk>, as Marian does by default)",
            [](const YAML::Node& v, D& o, const std::string& key) {
              const bool never = v.IsScalar() && (v.Scalar() == "inf" || v.Scalar() == "+inf");
              const double p =
                  never ? std::numeric_limits<double>::infinity() : config::detail::from_yaml<double>(v, key);
              MOE_CHECK(!std::isnan(p) && p != -std::numeric_limits<double>::infinity(), key,
                        " must be a number or inf, got ", v.Scalar());
              o.search.unkpen = p;
            },
            [](const D& o) { return YAML::Node(o.search.unkpen); })
        .add("sampling", &D::search, &S::sampling,
             "sample each output token instead of beam search: beam independent samples per input (ranked by the "
             "length-normalised score for n_best)")
        .add("sampling_topk", &D::search, &S::sampling_topk,
             "sampling: draw from the k most probable tokens only (0 = all)", at_least<int64_t>(0))
        .add("sampling_topp", &D::search, &S::sampling_topp,
             "sampling: draw from the smallest set of most probable tokens whose probability reaches p (1 = all)",
             [](const double& v, const std::string& key) {
               MOE_CHECK(v > 0 && v <= 1, key, " must be in (0, 1], got ", v);
             })
        .add("temperature", &D::search, &S::temperature,
             "sampling: the logits are divided by it (< 1 sharper, > 1 flatter)", above(0.0))
        .add("seed", &D::search, &S::seed,
             "sampling: the random seed; an input's samples depend only on it and the input's tokens",
             at_least<int64_t>(0))
        .add("max_tokens", &D::max_tokens,
             "padded tokens per batch (translating: source tokens x beam, the hypotheses' tokens); 0 = auto: 4096, "
             "translating min(4096 x beam, 16384)",
             at_least<int64_t>(0))
        .add_custom(
            "device", config::ValueType::String, "cpu, cuda, cuda:N or auto (a GPU when present)",
            [](const YAML::Node& v, D& o, const std::string& key) {
              o.device = DeviceChoice::parse(config::detail::from_yaml<std::string>(v, key), key);
            },
            [](const D& o) { return YAML::Node(o.device.str()); })
        .add("dtype", &D::dtype, "compute dtype (bf16 on a GPU)");
    return k;
  }();
  return keys;
}

const std::vector<std::string>& search_key_names() {
  static const std::vector<std::string> names = {"beam",      "n_best",    "lenpen",  "length_penalty",
                                                 "max_len_a", "max_len_b", "min_len", "no_repeat_ngram_size",
                                                 "unkpen"};
  return names;
}

const std::vector<std::string>& sampling_key_names() {
  static const std::vector<std::string> names = {"sampling", "sampling_topk", "sampling_topp", "temperature", "seed"};
  return names;
}

std::vector<std::string> best_hypothesis_search_keys() {
  std::vector<std::string> keys = search_key_names();
  std::erase(keys, "n_best");
  return keys;
}

int64_t scoring_batch_tokens(const DecodingOptions& o) { return o.max_tokens > 0 ? o.max_tokens : kAutoBatchTokens; }

int64_t translation_batch_tokens(const DecodingOptions& o) {
  if (o.max_tokens > 0) return o.max_tokens;
  return std::min(kAutoBatchTokens * o.search.beam, kAutoHypothesisTokens);
}

std::string KeyNaming::operator()(const std::string& key) const {
  if (!flags) return section.empty() ? key : section + "." + key;
  std::string flag = "--" + key;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

void check_decoding_options(const DecodingOptions& o, const KeyNaming& name) {
  const SearchOptions& s = o.search;
  MOE_CHECK(s.n_best <= s.beam, name("n_best"), " ", s.n_best, " must be in [1, ", name("beam"), " = ", s.beam, "]");
  const SearchOptions plain;
  for (const auto& [key, set] : {std::pair{"sampling_topk", s.sampling_topk != plain.sampling_topk},
                                 {"sampling_topp", s.sampling_topp != plain.sampling_topp},
                                 {"temperature", s.temperature != plain.temperature},
                                 {"seed", s.seed != plain.seed}})
    MOE_CHECK(s.sampling || !set, name(key), " applies to sampling only: add ", name("sampling"));
}

Placement decoding_placement(const DecodingOptions& o, const KeyNaming& name) {
  const Placement p{o.device.resolve(), dtype_of(o.dtype)};
  MOE_CHECK(p.dtype == DType::f32 || p.device.is_cuda(), name("dtype"), " ", enum_name(o.dtype),
            " needs a GPU (the CPU computes in f32); use ", name("device"), " cuda or ", name("dtype"), " f32");
  return p;
}

}  // namespace moe
