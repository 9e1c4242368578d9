// The serving worker (lib/serving/worker.h, responses.h) on a tiny checkpoint: jobs with the same options
// are decoded together and each gets what moe-translate's path (translate_lines) gives for its lines
// (n-best scores to 1e-5), target prefixes included, in batches that mix jobs with and without them;
// other options form their own batch; an abandoned job, or one whose client left (asked when taken), is
// skipped; the JSON bodies hold the texts; a model with a shortlist (moe-serve --shortlist) translates as
// moe-translate --shortlist and within its list; word alignments are moe-translate --alignment's (and
// --alignment-words'), in batches of their own; word scores are the search's. Generate jobs (prompts of a language
// model) batch the same way and get what moe-generate's path (generate_continuations) gives.
#include "serving/worker.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <future>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/shortlist_option.h"
#include "serving/responses.h"
#include "translator/lm_generation.h"
#include "translator/pair_alignment.h"
#include "translator/tiny_model.h"
#include "translator/translate_text.h"

using namespace moe;
using namespace moe::serving;

namespace {
TranslateRequest request(std::vector<std::string> text, int beam, int n_best) {
  TranslateRequest r;
  r.text = std::move(text);
  r.search.beam = beam;
  r.search.n_best = n_best;
  r.search.max_len_b = 8;
  return r;
}

/// The tiny translation model (test::tiny_model(13, 32, 4.f)) served as "tiny", saved in a temp folder `dir_name`.
std::vector<ServedModel> served_tiny(const std::string& dir_name) {
  std::vector<ServedModel> models;
  models.push_back(load_served_model("tiny", test::save_tiny(test::tiny_model(13, 32, 4.f), test::temp_dir(dir_name)),
                                     Device::cpu()));
  return models;
}

/// moe-translate's output lines for `r` (translate_lines with the same options and the model's shortlist).
std::vector<std::string> reference(const ServedModel& m, const TranslateRequest& r) {
  TranslatorOptions o;
  o.search = r.search;
  o.search.unk_id = m.tgt->unk_id();
  o.shortlist = m.shortlist.get();
  const Translator tr(*m.ck.model->encoder_decoder(), *m.ck.params, Device::cpu(), o);
  TranslateStats stats;
  return translate_lines(tr, *m.src, *m.tgt, r.text, r.search.n_best, 0, stats, {}, r.prefix);
}

/// The same lines from a translate body (n-best lines as moe-translate writes them).
std::vector<std::string> lines_of(const std::string& body, int n_best) {
  const auto j = nlohmann::json::parse(body);
  std::vector<std::string> out;
  int index = 0;
  for (const auto& t : j["translations"]) {
    if (n_best == 1)
      out.push_back(t["text"]);
    else
      for (const auto& h : t["hypotheses"])
        out.push_back(std::to_string(index) + "\t" + format_score(h["score"]) + "\t" + h["text"].get<std::string>());
    ++index;
  }
  return out;
}
/// Equal lines, except that n-best scores may differ by 1e-5: a sentence's float log-probs move in the
/// 6th decimal with the batch it is decoded in (moe-translate's own do with --max-tokens).
void check_same_line(const std::string& got, const std::string& want) {
  const size_t g1 = got.find('\t'), g2 = got.rfind('\t'), w1 = want.find('\t'), w2 = want.rfind('\t');
  if (g1 == std::string::npos || w1 == std::string::npos) {
    CHECK(got == want);
    return;
  }
  CHECK(got.substr(0, g1) == want.substr(0, w1));
  CHECK(got.substr(g2) == want.substr(w2));
  CHECK(std::stod(got.substr(g1 + 1, g2 - g1 - 1)) == Approx(std::stod(want.substr(w1 + 1, w2 - w1 - 1))).margin(1e-5));
}

/// Holds the worker in a job of its own until release(), so that the jobs queued meanwhile batch together whatever
/// how soon its thread wakes (a request arriving alone would start at once, by itself).
class WorkerHold {
 public:
  explicit WorkerHold(Worker& worker)
      : job_(worker.run_alone(0, 1, [all = queued_.get_future().share()] {
          all.wait();
          return std::string("{}");
        })) {}
  void release() {
    queued_.set_value();
    CHECK(job_.result.get().json == "{}");
  }

 private:
  std::promise<void> queued_;  // before job_, whose job waits on it
  Submitted job_;
};
}  // namespace

TEST_CASE("the worker batches jobs of the same options and routes each its results", "[serving]") {
  std::vector<ServedModel> models = served_tiny("serving-worker");
  REQUIRE(models[0].translates());
  ServerMetrics metrics;
  Worker worker(models, Device::cpu(), {.batching = {.max_tokens = 1000, .max_wait = std::chrono::milliseconds(300)}},
                metrics);
  WorkerHold hold(worker);  // until every request is queued
  const std::vector<TranslateRequest> requests = {request({"w1 w2 w3", "w4"}, 4, 1), request({"w5 w6"}, 4, 3),
                                                  request({"w7 w8 w9 w10", "w2 w2"}, 4, 2),
                                                  request({"w1 w2 w3"}, 2, 1)};
  std::vector<Submitted> jobs;
  for (const auto& r : requests) {
    int64_t truncated = 0;
    jobs.push_back(worker.translate(0, r, encode_request(models[0], r, truncated)));
    CHECK(jobs.back().pushed == PushResult::accepted);
  }
  TranslateRequest dropped = request({"w3"}, 3, 1);
  int64_t truncated = 0;
  Submitted abandoned = worker.translate(0, dropped, encode_request(models[0], dropped, truncated));
  abandoned.state->abandoned = true;
  // A client that leaves after queueing, before its handler noticed: the worker asks when it takes the job.
  std::atomic<bool> left{false};
  Submitted gone =
      worker.translate(0, dropped, encode_request(models[0], dropped, truncated), {}, [&left] { return left.load(); });
  left = true;
  hold.release();
  for (size_t i = 0; i < jobs.size(); ++i) {
    INFO("request " << i);
    const JobResult r = jobs[i].result.get();
    REQUIRE(r.status == 200);
    const std::string body = translate_body(models[0], requests[i].search.n_best, r.hypotheses, 0);
    const auto got = lines_of(body, requests[i].search.n_best), want = reference(models[0], requests[i]);
    REQUIRE(got.size() == want.size());
    for (size_t l = 0; l < got.size(); ++l) check_same_line(got[l], want[l]);
  }
  worker.close();
  CHECK(abandoned.result.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  CHECK(gone.result.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  // Beam 4 (three requests, five sentences) in one batch, beam 2 in another; the given-up jobs in none.
  const std::string text = metrics.prometheus(0, 0);
  CHECK_THAT(text, Catch::Contains("moe_serve_batch_sentences_count 2\n"));
  CHECK_THAT(text, Catch::Contains("moe_serve_batch_sentences_sum 6\n"));
  CHECK_THAT(text, Catch::Contains("moe_serve_dropped_sentences_total 2\n"));
  CHECK(worker.translate(0, requests[0], {{4}}).pushed == PushResult::closed);
}

TEST_CASE("a batch mixes jobs with and without target prefixes, each as moe-translate --prefix", "[serving]") {
  std::vector<ServedModel> models = served_tiny("serving-prefix");
  ServerMetrics metrics;
  Worker worker(models, Device::cpu(), {.batching = {.max_tokens = 1000, .max_wait = std::chrono::milliseconds(300)}},
                metrics);
  WorkerHold hold(worker);  // until every request is queued
  TranslateRequest with = request({"w1 w2 w3", "w4", "w5 w6"}, 3, 2);
  with.prefix = {"w17 w18", "", "w19"};
  const std::vector<TranslateRequest> requests = {request({"w1 w2 w3", "w5 w6"}, 3, 2), with, request({"w7"}, 3, 1)};
  std::vector<Submitted> jobs;
  for (const auto& r : requests) {
    int64_t truncated = 0;
    jobs.push_back(worker.translate(0, r, encode_request(models[0], r, truncated), encode_prefixes(models[0], r)));
  }
  hold.release();
  for (size_t i = 0; i < jobs.size(); ++i) {
    INFO("request " << i);
    const JobResult r = jobs[i].result.get();
    REQUIRE(r.status == 200);
    const int n_best = requests[i].search.n_best;
    const auto got = lines_of(translate_body(models[0], n_best, r.hypotheses, 0), n_best);
    const auto want = reference(models[0], requests[i]);
    REQUIRE(got.size() == want.size());
    for (size_t l = 0; l < got.size(); ++l) check_same_line(got[l], want[l]);
    if (i == 1)  // every hypothesis of a prefixed line begins with its prefix
      for (size_t s : {0, 2})
        for (const Hypothesis& h : r.hypotheses[s])
          CHECK(hypothesis_text(*models[0].tgt, h).rfind(with.prefix[s], 0) == 0);
  }
  worker.close();
  const std::string text = metrics.prometheus(0, 0);
  CHECK_THAT(text, Catch::Contains("moe_serve_batch_sentences_count 1\n"));  // all six sentences together
  CHECK_THAT(text, Catch::Contains("moe_serve_batch_sentences_sum 6\n"));
  TranslateRequest too_long = request({"w1", "w2"}, 3, 1);
  too_long.prefix = {"w3",
                     "w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4 w4"};
  try {
    encode_prefixes(models[0], too_long);
    FAIL("a prefix past max_positions was accepted");
  } catch (const RequestError& e) {
    CHECK(e.field() == "prefix[1]");
    CHECK_THAT(e.message(), Catch::Contains("sentence 1"));  // the request's line, not a batch's
  }
}

TEST_CASE("a model with a shortlist translates as moe-translate --shortlist", "[serving][shortlist]") {
  const auto dir = test::temp_dir("serving-shortlist");
  std::vector<ServedModel> models = served_tiny("serving-shortlist");
  std::string lex;  // each word translates to itself only: with FIRST 4 (the specials) the outputs are source words
  for (int i = 0; i < 20; ++i) lex += "w" + std::to_string(i) + " w" + std::to_string(i) + " 0.9\n";
  test::write_file(dir / "lex.s2t", lex);
  std::string summary;
  models[0].shortlist = cli::load_shortlist({(dir / "lex.s2t").string(), {.first = 4, .best = 1}}, *models[0].src,
                                            *models[0].tgt, summary);
  CHECK_THAT(summary, Catch::Contains("20 pairs (0 skipped"));
  ServerMetrics metrics;
  Worker worker(models, Device::cpu(), {.batching = {.max_tokens = 1000}}, metrics);
  TranslateRequest r = request({"w1 w2 w3", "w7 w7"}, 3, 2);
  r.search.unkpen = std::numeric_limits<double>::infinity();
  int64_t truncated = 0;
  const JobResult got = worker.translate(0, r, encode_request(models[0], r, truncated)).result.get();
  REQUIRE(got.status == 200);
  CHECK(models[0].shortlist->lists() == 1);  // the worker's one batch
  const auto lines = lines_of(translate_body(models[0], 2, got.hypotheses, 0), 2), want = reference(models[0], r);
  REQUIRE(lines.size() == want.size());
  for (size_t l = 0; l < lines.size(); ++l) check_same_line(lines[l], want[l]);
  for (const auto& hyps : got.hypotheses)  // the batch's list: the specials and w1 w2 w3 w7
    for (const Hypothesis& h : hyps)
      for (int32_t id : h.tokens) CHECK((id == 5 || id == 6 || id == 7 || id == 11));
  worker.close();
}

TEST_CASE("score bodies equal forced decoding; the model list names each model", "[serving]") {
  std::vector<ServedModel> models = served_tiny("serving-score");
  ScoreRequest s;
  s.src = {"w1 w2", "w3"};
  s.tgt = {"w4", "w5 w6 w7"};
  check_score_request(models[0], s);
  const auto j = nlohmann::json::parse(score_body(models[0], s, Device::cpu(), DType::f32));
  const auto& m = models[0];
  const auto want = score_pairs(*m.ck.model, *m.ck.params, Device::cpu(), {m.src->encode("w1 w2"), m.src->encode("w3")},
                                {m.tgt->encode("w4"), m.tgt->encode("w5 w6 w7")}, {});
  REQUIRE(j["scores"].size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(j["scores"][i]["log_prob"].get<double>() == want[i].log_prob);
    CHECK(j["scores"][i]["tokens"].get<int64_t>() == want[i].tokens);
    CHECK_FALSE(j["scores"][i].contains("alignment"));
    CHECK_FALSE(j["scores"][i].contains("word_scores"));
  }
  // with "word_scores": each target token's log-prob, as moe-score pairs --word-scores gives them
  s.word_scores = true;
  const auto scored = nlohmann::json::parse(score_body(models[0], s, Device::cpu(), DType::f32));
  s.word_scores = false;
  for (size_t i = 0; i < 2; ++i) {
    REQUIRE(scored["scores"][i]["word_scores"].size() == want[i].token_scores.size());
    for (size_t t = 0; t < want[i].token_scores.size(); ++t)
      CHECK(scored["scores"][i]["word_scores"][t].get<double>() == Approx(want[i].token_scores[t]).margin(1e-6));
  }
  // with "alignment": each pair's links, as moe-score pairs --alignment gives them (align_pairs)
  s.alignment = AlignmentOutput{};
  const auto aligned = nlohmann::json::parse(score_body(models[0], s, Device::cpu(), DType::f32));
  const auto heads = align_pairs(*m.ck.model->encoder_decoder(), *m.ck.params, Device::cpu(), {m.src->encode("w1 w2"), m.src->encode("w3")},
                                 {m.tgt->encode("w4"), m.tgt->encode("w5 w6 w7")}, {});
  for (size_t i = 0; i < 2; ++i) {
    std::vector<data::WordLink> links;
    for (const auto& l : aligned["scores"][i]["alignment"]) links.push_back({l[0].get<int32_t>(), l[1].get<int32_t>()});
    CHECK(links == alignment_links(heads[i], AlignmentOutput{}));
    CHECK(links.size() == want[i].tokens);  // hard: one link per target token and </s>
  }
  s.alignment.reset();
  s.tgt = {"w4", "w5 w6 w7 w1 w2 w3 w4 w5 w6 w7 w1 w2 w3 w4 w5 w6 w7 w1 w2 w3 w4 w5 w6 w7 w1 w2 w3 w4 w5 w6 w7 w8 w9"};
  try {
    score_body(models[0], s, Device::cpu(), DType::f32);
    FAIL("a target past max_positions was scored");
  } catch (const RequestError& e) {
    CHECK(e.field() == "tgt[1]");
  }
  ScoreRequest lm;
  lm.text = {"w1"};
  CHECK_THROWS_AS(check_score_request(models[0], lm), RequestError);
  const auto list = nlohmann::json::parse(models_body(models, Device::cpu()));
  CHECK(list["models"][0]["name"] == "tiny");
  CHECK(list["models"][0]["kind"] == "translation");
}

TEST_CASE("generate jobs are batched by options and continue prompts as moe-generate does", "[serving]") {
  std::vector<ServedModel> models;
  const auto lm_dir = test::temp_dir("serving-generate-lm"), mt_dir = test::temp_dir("serving-generate-mt");
  models.push_back(load_served_model("lm", test::save_tiny(test::tiny_lm(), lm_dir, {"lm"}), Device::cpu()));
  models.push_back(load_served_model("mt", test::save_tiny(test::tiny_model(13, 32, 4.f), mt_dir), Device::cpu()));
  CHECK(models[0].generates());
  CHECK_FALSE(models[0].translates());
  CHECK_FALSE(models[1].generates());
  ServerMetrics metrics;
  Worker worker(models, Device::cpu(), {.batching = {.max_tokens = 1000, .max_wait = std::chrono::milliseconds(300)}},
                metrics);
  WorkerHold hold(worker);  // until every request is queued
  const auto generate_request = [](std::vector<std::string> text, int beam, int n_best, bool sampling) {
    GenerateRequest g;
    g.text = std::move(text);
    g.search.beam = beam;
    g.search.n_best = n_best;
    g.search.max_len_b = 6;
    g.search.sampling = sampling;
    g.search.seed = 9;
    return g;
  };
  // Two greedy jobs (one batch), a sampled one (its own), and a translation job of the same beam (its own).
  const std::vector<GenerateRequest> requests = {generate_request({"w1 w2", ""}, 1, 1, false),
                                                 generate_request({"w3"}, 1, 1, false),
                                                 generate_request({"w4 w5", "w4 w5", "w6"}, 3, 2, true)};
  std::vector<Submitted> jobs;
  for (const auto& g : requests) jobs.push_back(worker.generate(0, g, encode_prompts(models[0], g)));
  TranslateRequest t = request({"w1 w2"}, 1, 1);
  int64_t truncated = 0;
  Submitted translation = worker.translate(1, t, encode_request(models[1], t, truncated));
  hold.release();
  const ServedModel& lm = models[0];
  for (size_t i = 0; i < jobs.size(); ++i) {
    INFO("request " << i);
    const JobResult r = jobs[i].result.get();
    REQUIRE(r.status == 200);
    if (i == 2)  // equal prompts, one seed: the same samples (the draws are keyed by the prompt's tokens)
      for (size_t h = 0; h < 2; ++h) CHECK(r.hypotheses[0][h].tokens == r.hypotheses[1][h].tokens);
    TranslatorOptions o;
    o.search = requests[i].search;
    const auto want = generate_continuations(*lm.ck.model->decoder(), *lm.ck.params, Device::cpu(), o,
                                             encode_prompts(lm, requests[i]));
    REQUIRE(r.hypotheses.size() == want.size());
    const auto body = nlohmann::json::parse(generate_body(lm, requests[i].search.n_best, r.hypotheses, true));
    CHECK(body["model"] == "lm");
    for (size_t l = 0; l < want.size(); ++l) {
      REQUIRE(r.hypotheses[l].size() == static_cast<size_t>(requests[i].search.n_best));
      for (size_t h = 0; h < want[l].size() && h < r.hypotheses[l].size(); ++h) {
        CHECK(r.hypotheses[l][h].tokens == want[l][h].tokens);
        CHECK(r.hypotheses[l][h].score == Approx(want[l][h].score).margin(1e-5));
      }
      CHECK(body["generations"][l]["text"] == hypothesis_text(*lm.lm, want[l][0]));
      const auto& scores = body["generations"][l]["word_scores"];  // the new tokens', then </s>'s
      REQUIRE(scores.size() == want[l][0].token_scores.size());
      for (size_t t = 0; t < scores.size(); ++t)
        CHECK(scores[t].get<double>() == Approx(want[l][0].token_scores[t]).margin(1e-5));
      CHECK(body["generations"][l].contains("hypotheses") == (requests[i].search.n_best > 1));
    }
  }
  CHECK(translation.result.get().status == 200);
  worker.close();
  const std::string text = metrics.prometheus(0, 0);
  CHECK_THAT(text, Catch::Contains("moe_serve_batch_sentences_count 3\n"));  // greedy 3, sampled 3, translation 1
  CHECK_THAT(text, Catch::Contains("moe_serve_batch_sentences_sum 7\n"));
  GenerateRequest too_long = generate_request({"w1", std::string()}, 1, 1, false);
  for (int k = 0; k < 24; ++k) too_long.text[1] += "w2 ";
  try {
    encode_prompts(lm, too_long);
    FAIL("a prompt past max_positions was accepted");
  } catch (const RequestError& e) {
    CHECK(e.field() == "text[1]");
  }
}

TEST_CASE("alignments are moe-translate --alignment's, in batches of their own", "[serving][alignment]") {
  std::vector<ServedModel> models = served_tiny("serving-alignment");
  ServerMetrics metrics;
  Worker worker(models, Device::cpu(), {.batching = {.max_tokens = 1000, .max_wait = std::chrono::milliseconds(300)}},
                metrics);
  WorkerHold hold(worker);  // until every request is queued
  TranslateRequest hard = request({"w1 w2 w3", "w4 w5"}, 3, 2), soft = request({"w6 w7 w8"}, 3, 1);
  hard.alignment = AlignmentOutput{};
  soft.alignment = AlignmentOutput{AlignmentKind::soft, 0};
  TranslateRequest plain = request({"w9"}, 3, 1);
  std::vector<Submitted> jobs;
  for (const TranslateRequest* r : {&hard, &soft, &plain}) {
    int64_t truncated = 0;
    jobs.push_back(worker.translate(0, *r, encode_request(models[0], *r, truncated)));
  }
  hold.release();
  std::vector<JobResult> results;
  for (Submitted& j : jobs) results.push_back(j.result.get());
  for (const JobResult& r : results) REQUIRE(r.status == 200);
  // The reference: moe-translate's lines "text ||| s-t ..." (n-best: the alignment in a fourth field).
  TranslatorOptions o;
  o.search = hard.search;
  o.search.unk_id = models[0].tgt->unk_id();
  o.alignment = true;
  const Translator tr(*models[0].ck.model->encoder_decoder(), *models[0].ck.params, Device::cpu(), o);
  TranslateStats stats;
  const auto want =
      translate_lines(tr, *models[0].src, *models[0].tgt, hard.text, 2, 0, stats, {}, {}, {hard.alignment});
  const auto body =
      nlohmann::json::parse(translate_body(models[0], 2, results[0].hypotheses, 0, {hard.alignment, true}));
  std::vector<std::string> got;
  int index = 0;
  for (const auto& t : body["translations"]) {
    for (const auto& h : t["hypotheses"]) {
      std::string links;
      for (const auto& l : h["alignment"])
        links += (links.empty() ? "" : " ") + std::to_string(l[0].get<int>()) + "-" + std::to_string(l[1].get<int>());
      got.push_back(std::to_string(index) + "\t" + format_score(h["score"]) + "\t" + h["text"].get<std::string>() +
                    "\t" + links);
    }
    CHECK(t["alignment"] == t["hypotheses"][0]["alignment"]);
    const std::vector<float>& scores = results[0].hypotheses[static_cast<size_t>(index)][0].token_scores;
    REQUIRE(t["word_scores"].size() == scores.size());  // each token's log-prob, then </s>'s
    for (size_t k = 0; k < scores.size(); ++k)
      CHECK(t["word_scores"][k].get<double>() == Approx(scores[k]).margin(1e-6));
    ++index;
  }
  REQUIRE(got.size() == want.size());
  for (size_t l = 0; l < got.size(); ++l) {  // index, score (to 1e-5, as check_same_line), text, alignment
    const size_t g = got[l].find('\t', got[l].find('\t') + 1), w = want[l].find('\t', want[l].find('\t') + 1);
    CHECK(got[l].substr(g) == want[l].substr(w));
    check_same_line(got[l].substr(0, g) + "\t", want[l].substr(0, w) + "\t");
  }
  // With alignment->words, moe-translate --alignment-words' links between words.
  AlignmentOutput words_o;
  words_o.words = true;
  int64_t truncated = 0;
  const auto want_words =
      translate_lines(tr, *models[0].src, *models[0].tgt, hard.text, 1, 0, stats, {}, {}, {words_o});
  const auto words_body = nlohmann::json::parse(
      translate_body(models[0], 2, results[0].hypotheses, 0, {words_o}, encode_request(models[0], hard, truncated)));
  REQUIRE(words_body["translations"].size() == want_words.size());
  for (size_t l = 0; l < want_words.size(); ++l) {
    std::string links;
    for (const auto& k : words_body["translations"][l]["alignment"])
      links += (links.empty() ? "" : " ") + std::to_string(k[0].get<int>()) + "-" + std::to_string(k[1].get<int>());
    CHECK(want_words[l].substr(want_words[l].find(" ||| ") + 5) == links);
  }
  // Soft: one row per output token and </s>, each a distribution over the source's tokens and </s>.
  const auto soft_body =
      nlohmann::json::parse(translate_body(models[0], 1, results[1].hypotheses, 0, {soft.alignment}));
  const auto& rows = soft_body["translations"][0]["alignment"];
  REQUIRE(rows.size() == results[1].hypotheses[0][0].tokens.size() + 1);
  for (const auto& row : rows) {
    REQUIRE(row.size() == 4);
    double sum = 0;
    for (const auto& w : row) sum += w.get<double>();
    CHECK(sum == Approx(1).margin(1e-5));
  }
  // Without "alignment" there is none, and that job was decoded apart from the two that asked.
  CHECK(results[2].hypotheses[0][0].alignment.empty());
  CHECK_FALSE(nlohmann::json::parse(translate_body(models[0], 1, results[2].hypotheses, 0))["translations"][0].contains(
      "alignment"));
  worker.close();
  CHECK_THAT(metrics.prometheus(0, 0), Catch::Contains("moe_serve_batch_sentences_count 2\n"));
}
