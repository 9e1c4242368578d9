// worker.h implementation. Covered by tests/serving/worker_test.cpp, tests/serving/lm_fusion_test.cpp and
// tests/scripts/serve.sh.
#include "serving/worker.h"

#include <algorithm>
#include <chrono>
#include <future>

#include "common/error.h"
#include "translator/lm_generation.h"
#include "translator/translation_models.h"

namespace moe::serving {

namespace {
void fail(std::vector<Job>& jobs, int status, const std::string& field, const std::string& message) {
  for (Job& j : jobs) {
    JobResult r;
    r.status = status;
    r.error_field = field;
    r.error = message;
    try {
      j.state->result.set_value(std::move(r));
    } catch (const std::future_error&) {  // answered before the error (decode() answers job by job)
    }
  }
}
}  // namespace

ServedModel load_served_model(const std::string& name, const std::string& path, Device device) {
  ServedModel m;
  m.name = name;
  m.path = path;
  m.ck = load_checkpoint(path, device);
  m.weights = std::make_unique<InferenceWeights>(m.ck, Quantize::none, device);
  if (const EncoderDecoder* net = m.ck.model->encoder_decoder()) {
    m.src = m.ck.find_vocab({"src", "tgt"});
    m.tgt = m.ck.find_vocab({"tgt", "src"});
    MOE_CHECK(m.src && m.tgt, "'", path, "' holds no vocabulary");
    m.encoder = std::make_unique<Translator>(*net, *m.ck.params, device, TranslatorOptions{});
  } else {
    MOE_CHECK(m.ck.model->is_language_model(), "'", path, "' holds a ", m.ck.model->type(),
              " model, which neither translates nor is a language model");
    m.lm = m.ck.find_vocab({"lm", "tgt", "src"});
    MOE_CHECK(m.lm, "'", path, "' holds no vocabulary");
    m.output_weight = m.ck.model->decoder() && has_output_weight(*m.ck.model->decoder(), *m.ck.params);
  }
  return m;
}

size_t served_model(const std::vector<ServedModel>& models, const std::string& name, const std::string& field) {
  if (name.empty()) return 0;
  std::string served;
  for (size_t i = 0; i < models.size(); ++i) {
    if (models[i].name == name) return i;
    served += (served.empty() ? "" : ", ") + models[i].name;
  }
  throw RequestError(field, "no model called '" + name + "' (served: " + served + ")", 404);
}

std::optional<size_t> fused_lm(const std::vector<ServedModel>& models, size_t translation, const FusedLm& lm,
                               bool shortlisted) {
  if (lm.model.empty()) return std::nullopt;
  const size_t i = served_model(models, lm.model, "lm");
  const ServedModel &tm = models[translation], &l = models[i];
  if (!l.generates()) throw RequestError("lm", "'" + l.name + "' is not a causal language model");
  const int64_t at = first_vocab_difference(*tm.tgt, *l.lm);
  if (at >= 0)
    throw RequestError("lm", "'" + l.name + "' reads another vocabulary than the target of '" + tm.name +
                                 "' (first difference at id " + std::to_string(at) + ")");
  if (shortlisted && tm.shortlist && !l.output_weight)
    throw RequestError("lm", "'" + l.name + "' has an adaptive softmax, whose output the shortlist of '" + tm.name +
                                 "' cannot restrict (it can score pairs)");
  return i;
}

EnsembleDecoder fused_decoder(const ServedModel& translation, const ServedModel& lm, double weight) {
  return EnsembleDecoder({{translation.ck.model->encoder_decoder(), translation.ck.params.get(), 1.0, translation.name},
                          {lm.ck.model->decoder(), lm.ck.params.get(), weight, lm.name, true}});
}

Worker::Worker(std::vector<ServedModel>& models, Device device, WorkerOptions options, ServerMetrics& metrics)
    : models_(models), device_(device), options_(options), metrics_(metrics), queue_(options.batching) {
  thread_ = std::thread([this] { loop(); });
}

Worker::~Worker() { close(); }

void Worker::close() {
  queue_.close();
  if (thread_.joinable()) thread_.join();
}

Submitted Worker::submit(Job job, ClientGone client_gone) {
  job.state->client_gone = std::move(client_gone);
  Submitted s;
  s.state = job.state;
  s.result = job.state->result.get_future();
  s.pushed = queue_.push(std::move(job));
  return s;
}

Job Worker::search_job(BatchKey key, const BeamOptions& search, std::vector<std::vector<int32_t>> lines) {
  Job job;
  job.key = key;
  job.key.search = search;
  job.key.search.n_best = search.beam;  // jobs that differ only in n_best share a batch
  job.lines = static_cast<int64_t>(lines.size());
  for (const auto& ids : lines) job.tokens += (static_cast<int64_t>(ids.size()) + 1) * search.beam;  // hypotheses'
  job.state = std::make_shared<JobState>();
  job.state->sources = std::move(lines);
  job.state->n_best = search.n_best;
  return job;
}

Submitted Worker::translate(size_t model, const TranslateRequest& request, std::vector<std::vector<int32_t>> sources,
                            TargetPrefixes prefixes, ClientGone client_gone) {
  MOE_CHECK(prefixes.empty() || prefixes.size() == sources.size(), "serving: ", prefixes.size(), " prefixes for ",
            sources.size(), " sentences");
  Job job = search_job({.model = model,
                        .experts = request.experts,
                        .alignment = request.alignment.has_value(),
                        .lm = fused_lm(models_, model, request.lm, /*shortlisted=*/true),
                        .lm_weight = request.lm.weight},
                       request.search, std::move(sources));
  job.state->prefixes = std::move(prefixes);
  return submit(std::move(job), std::move(client_gone));
}

Submitted Worker::generate(size_t model, const GenerateRequest& request, std::vector<std::vector<int32_t>> prompts,
                           ClientGone client_gone) {
  return submit(search_job({.model = model, .generate = true}, request.search, std::move(prompts)),
                std::move(client_gone));
}

Submitted Worker::run_alone(size_t model, int64_t lines, std::function<std::string()> work, ClientGone client_gone) {
  Job job;
  job.key.model = model;
  job.key.alone = next_alone_++;
  job.lines = lines;
  job.state = std::make_shared<JobState>();
  job.state->run = std::move(work);
  return submit(std::move(job), std::move(client_gone));
}

void Worker::loop() {
  for (std::vector<Job> jobs = queue_.take(); !jobs.empty(); jobs = queue_.take()) {
    int64_t dropped = 0;
    std::erase_if(jobs, [&dropped](const Job& j) {
      const bool gone = j.state->given_up();  // asked once: a client can leave between two looks
      dropped += gone ? j.lines : 0;
      return gone;
    });
    if (dropped) metrics_.sentences_dropped(dropped);
    if (jobs.empty()) continue;
    try {
      if (jobs[0].key.alone) {
        JobResult r;
        r.json = jobs[0].state->run();
        jobs[0].state->result.set_value(std::move(r));
      } else {
        decode(jobs);
      }
    } catch (const RequestError& e) {  // found while scoring (a line too long for the model)
      fail(jobs, e.status(), e.field(), e.message());
    } catch (const std::exception& e) {  // a model error fails the jobs of this batch, not the server
      fail(jobs, 500, "model", e.what());
    }
  }
}

void Worker::decode(std::vector<Job>& jobs) {
  const auto t0 = std::chrono::steady_clock::now();
  const BatchKey& k = jobs[0].key;
  const ServedModel& m = models_[k.model];
  TranslatorOptions o;
  o.search = k.search;
  o.max_tokens = options_.batching.max_tokens;
  o.dtype = options_.dtype;
  o.experts = k.experts;
  o.alignment = k.alignment;
  o.search.unk_id = (k.generate ? m.lm : m.tgt)->unk_id();
  if (!k.generate) o.shortlist = m.shortlist.get();
  std::vector<std::vector<int32_t>> all;
  const bool any_prefix =
      std::any_of(jobs.begin(), jobs.end(), [](const Job& j) { return !j.state->prefixes.empty(); });
  TargetPrefixes prefixes;  // when any job has them, one per sentence (empty for the jobs without)
  for (const Job& j : jobs) {
    all.insert(all.end(), j.state->sources.begin(), j.state->sources.end());
    if (any_prefix) prefixes.insert(prefixes.end(), j.state->prefixes.begin(), j.state->prefixes.end());
    prefixes.resize(any_prefix ? all.size() : 0);
  }
  std::optional<EnsembleDecoder> fused;
  if (k.lm) fused.emplace(fused_decoder(m, models_[*k.lm], k.lm_weight));
  const Decoder* translation = fused ? static_cast<const Decoder*>(&*fused) : m.ck.model->encoder_decoder();
  auto results = k.generate ? generate_continuations(*m.ck.model->decoder(), *m.ck.params, device_, o, all)
                            : Translator(*translation, *m.ck.params, device_, o).translate(all, {}, prefixes);
  int64_t tokens = 0;
  for (const auto& hyps : results)
    if (!hyps.empty()) tokens += static_cast<int64_t>(hyps[0].tokens.size());
  // Counted before any answer is given, so that a client who scrapes /metrics after its answer sees its batch.
  metrics_.batch_done(static_cast<int64_t>(all.size()), tokens,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  size_t next = 0;
  for (Job& j : jobs) {
    JobResult r;
    for (size_t i = 0; i < j.state->sources.size(); ++i, ++next) {
      auto& hyps = results[next];
      if (static_cast<int>(hyps.size()) > j.state->n_best) hyps.resize(static_cast<size_t>(j.state->n_best));
      r.hypotheses.push_back(std::move(hyps));
    }
    j.state->result.set_value(std::move(r));
  }
}

}  // namespace moe::serving
