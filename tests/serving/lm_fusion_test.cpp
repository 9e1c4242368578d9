// A served language model fused into moe-serve's translations and pair scores ("lm", "lm_weight"; lib/serving
// fused_lm, fused_decoder, Worker, score_body) on tiny random models over the same 24 words: a job that fuses one gets
// the library's search over the fused decoder (moe-translate --lm), jobs of other weights or none are batched apart,
// a fused pair score is the stepwise one (moe-score pairs --lm), and a name that is not served, not a causal
// language model or over another vocabulary is refused on "lm", as is an adaptive softmax in a search over a shortlist.
#include <catch2/catch.hpp>
#include <future>
#include <nlohmann/json.hpp>

#include "serving/responses.h"
#include "serving/worker.h"
#include "translator/stepwise_scores.h"
#include "translator/tiny_model.h"

using namespace moe;
using namespace moe::serving;

namespace {
/// "tm" (a tiny translation model), "lm" (a tiny causal LM over its words), "other" (an LM whose words 2 and 3
/// are swapped) and "adaptive" (an LM with an adaptive softmax), each saved in a folder of its own under `dir`.
std::vector<ServedModel> served(const std::filesystem::path& dir) {
  for (const char* sub : {"tm", "lm", "other", "adaptive"}) std::filesystem::create_directories(dir / sub);
  std::vector<ServedModel> models;
  models.push_back(load_served_model("tm", test::save_tiny(test::tiny_model(13, 32, 4.f), dir / "tm"), Device::cpu()));
  const auto lm = test::tiny_lm(7);
  models.push_back(load_served_model("lm", test::save_tiny(lm, dir / "lm", {"lm"}), Device::cpu()));
  const std::string other = test::save_tiny(lm, dir / "other", {"lm"}, test::swapped_words(2, 3));
  models.push_back(load_served_model("other", other, Device::cpu()));
  const std::string adaptive = test::save_tiny(test::tiny_adaptive_lm(5), dir / "adaptive", {"lm"});
  models.push_back(load_served_model("adaptive", adaptive, Device::cpu()));
  return models;
}

TranslateRequest request(const std::string& lm, double weight) {
  TranslateRequest r;
  r.text = {"w1 w2 w3", "w4", "w9 w8 w7 w6"};
  r.search.beam = 3;
  r.search.max_len_b = 8;
  r.lm = {lm, weight};
  return r;
}
}  // namespace

TEST_CASE("moe-serve fuses a served language model into translations and pair scores", "[serving][lm_fusion]") {
  const auto dir = test::temp_dir("serving-lm-fusion");
  std::vector<ServedModel> models = served(dir);
  const ServedModel &tm = models[0], &lm = models[1];
  ServerMetrics metrics;
  Worker worker(models, Device::cpu(), {.batching = {.max_tokens = 1000, .max_wait = std::chrono::milliseconds(300)}},
                metrics);
  std::promise<void> queued;
  Submitted hold = worker.run_alone(0, 1, [all = queued.get_future().share()] {
    all.wait();  // until every job is queued, so that those of one key batch together
    return std::string("{}");
  });
  const std::vector<TranslateRequest> requests = {request("lm", 0.5), request("", 0), request("lm", 0.5),
                                                  request("lm", 4.0)};
  std::vector<Submitted> jobs;
  for (const auto& r : requests) {
    int64_t truncated = 0;
    jobs.push_back(worker.translate(0, r, encode_request(tm, r, truncated)));
  }
  queued.set_value();
  CHECK(hold.result.get().json == "{}");
  std::vector<std::vector<int32_t>> ids;
  for (const auto& line : requests[0].text) ids.push_back(tm.src->encode(line));
  std::vector<JobResult> results;
  for (size_t i = 0; i < requests.size(); ++i) {
    INFO("request " << i);
    TranslatorOptions o;
    o.search = requests[i].search;
    o.search.unk_id = tm.tgt->unk_id();
    std::optional<EnsembleDecoder> fused;
    if (!requests[i].lm.model.empty()) fused.emplace(fused_decoder(tm, lm, requests[i].lm.weight));
    const Decoder& d = fused ? static_cast<const Decoder&>(*fused) : *tm.ck.model->encoder_decoder();
    const auto want = Translator(d, *tm.ck.params, Device::cpu(), o).translate(ids);
    const JobResult& got = results.emplace_back(jobs[i].result.get());
    REQUIRE(got.status == 200);
    REQUIRE(got.hypotheses.size() == want.size());
    for (size_t s = 0; s < want.size(); ++s) {
      CHECK(got.hypotheses[s][0].tokens == want[s][0].tokens);
      CHECK(got.hypotheses[s][0].log_prob == Approx(want[s][0].log_prob).margin(1e-5));
    }
  }
  bool differs = false;  // a heavy LM changes the translations
  for (size_t s = 0; s < ids.size(); ++s)
    differs |= results[3].hypotheses[s][0].tokens != results[1].hypotheses[s][0].tokens;
  CHECK(differs);
  // Three keys (weight 0.5 twice, none, weight 4), three batches.
  CHECK_THAT(metrics.prometheus(0, 0), Catch::Contains("moe_serve_batch_sentences_count 3\n"));

  // Pair scores: the fused decoder's, step by step.
  ScoreRequest s;
  s.src = {"w1 w2", "w3"};
  s.tgt = {"w4", "w5 w6 w7"};
  s.lm = {"lm", 0.5};
  check_score_request(tm, s);
  const auto j = nlohmann::json::parse(score_body(models[0], s, Device::cpu(), DType::f32, &lm));
  const auto want = score_pairs_stepwise(fused_decoder(tm, lm, 0.5), *tm.ck.params, Device::cpu(),
                                         {tm.src->encode("w1 w2"), tm.src->encode("w3")},
                                         {tm.tgt->encode("w4"), tm.tgt->encode("w5 w6 w7")}, {});
  const auto plain = nlohmann::json::parse(score_body(models[0], s, Device::cpu(), DType::f32));
  for (size_t i = 0; i < 2; ++i) {
    CHECK(j["scores"][i]["log_prob"].get<double>() == Approx(want[i].log_prob).margin(1e-6));
    CHECK(j["scores"][i]["log_prob"].get<double>() != Approx(plain["scores"][i]["log_prob"].get<double>()));
  }

  // Refusals, on "lm", from the handler's thread before anything is queued.
  const auto refusal = [&](const std::string& name) -> std::pair<int, std::string> {
    try {
      int64_t truncated = 0;
      const TranslateRequest r = request(name, 0.5);
      worker.translate(0, r, encode_request(tm, r, truncated));
    } catch (const RequestError& e) {
      CHECK(e.field() == "lm");
      return {e.status(), e.message()};
    }
    FAIL("accepted --lm " << name);
    return {};
  };
  CHECK(refusal("nowhere").first == 404);
  CHECK_THAT(refusal("tm").second, Catch::Contains("'tm' is not a causal language model"));
  CHECK_THAT(refusal("other").second,
             Catch::Contains("'other' reads another vocabulary than the target of 'tm' (first difference at id 6)"));
  CHECK(fused_lm(models, 0, {}) == std::nullopt);
  CHECK(fused_lm(models, 0, {"lm", 0.5}) == std::optional<size_t>(1));
  // An adaptive softmax fuses, but not into a search over a shortlist, which cannot restrict its output (a 400, not
  // the decoding's failure); pairs are scored over the whole vocabulary, so it scores them.
  CHECK(models[1].output_weight);
  CHECK_FALSE(models[3].output_weight);
  CHECK(fused_lm(models, 0, {"adaptive", 0.5}, true) == std::optional<size_t>(3));
  data::LexicalTable table;
  table.entries.push_back({4, 5, 0.5f});
  models[0].shortlist = std::make_unique<Shortlist>(table, static_cast<int32_t>(tm.tgt->size()), ShortlistOptions{});
  CHECK(fused_lm(models, 0, {"lm", 0.5}, true) == std::optional<size_t>(1));
  CHECK(fused_lm(models, 0, {"adaptive", 0.5}) == std::optional<size_t>(3));
  const auto [status, message] = refusal("adaptive");
  CHECK(status == 400);
  CHECK_THAT(message, Catch::Contains("'adaptive' has an adaptive softmax, whose output the shortlist of 'tm' cannot"));
  worker.close();
  std::filesystem::remove_all(dir);
}
