// The models a server holds and the one worker thread that runs them on their device. Translation
// requests become jobs (their source ids, encoded by the caller's thread as moe-translate encodes them)
// in a BatchQueue; the worker takes batches of jobs with the same model and search options, decodes all
// their sentences with one Translator::translate call (sorted by length and cut into --max-tokens
// batches, exactly as moe-translate does, and the same beam search or sampling), and hands each job its
// n-best lists in its own order. Generation requests (prompts for a language model) are batched the same
// way and continued by one generate_continuations call, as moe-generate continues them. A job's target prefixes
// (moe-translate --prefix) travel with its sentences, so one batch may mix sentences with and without them (an empty
// prefix forces nothing). A model with a shortlist decodes each batch over its list, the union of its sentences'
// (so a sentence's output may depend on the requests it is batched with, as in moe-translate). Jobs that ask for
// word alignments are batched apart, so that only they pay for the alignment pass, and so are those that fuse a
// served language model into the search (moe-translate --lm), by model and weight. Scoring jobs run
// alone on the same thread. A job whose client gave up (hung up, or timed out) is skipped if still queued, its
// sentences counted as dropped: the worker asks each job it takes whether its client is still there
// (JobState::client_gone, the HTTP layer's look at the socket), so that a client that hung up is not decoded
// even before its handler noticed. close() drains: everything queued is still done.
// Covered by tests/serving/worker_test.cpp, tests/serving/lm_fusion_test.cpp and tests/scripts/serve.sh.
#pragma once
#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "models/checkpoint.h"
#include "models/ensemble_decoder.h"
#include "models/inference_weights.h"
#include "serving/batch_queue.h"
#include "serving/metrics.h"
#include "serving/request.h"
#include "translator/pair_scores.h"
#include "translator/translator.h"

namespace moe::serving {

struct ServedModel {
  std::string name, path;
  LoadedCheckpoint ck;
  const data::Vocab* src = nullptr;  // translation models: source and target vocabularies
  const data::Vocab* tgt = nullptr;
  const data::Vocab* lm = nullptr;      // language models
  std::unique_ptr<Translator> encoder;  // translation models: encode_source_line's position limit
  std::unique_ptr<InferenceWeights> weights;  // on the CPU: the f32 dense weights transposed (released before ck)
  std::unique_ptr<Shortlist> shortlist;       // translation models: moe-serve --shortlist (translator/shortlist.h)
  bool output_weight = false;  // language models: an output layer that a shortlist can restrict (no adaptive softmax)
  bool translates() const { return encoder != nullptr; }
  bool generates() const { return !translates() && ck.model->decoder() != nullptr; }  // a causal language model
};

/// Loads `path` onto `device` as the model called `name`.
ServedModel load_served_model(const std::string& name, const std::string& path, Device device);

/// The index of the served model called `name` (empty: the first); a RequestError (404) on `field` when none is.
size_t served_model(const std::vector<ServedModel>& models, const std::string& name, const std::string& field);

/// The served language model `lm` fuses into translation model `translation` (none when it names none), checked: a
/// RequestError on "lm" when it is not a causal language model, reads another vocabulary than the target's, or
/// (`shortlisted`: a search over the translation model's --shortlist) has an adaptive softmax, which no list restricts.
std::optional<size_t> fused_lm(const std::vector<ServedModel>& models, size_t translation, const FusedLm& lm,
                               bool shortlisted = false);

/// The decoder of `translation` with `lm` fused in at `weight` (models/ensemble_decoder.h).
EnsembleDecoder fused_decoder(const ServedModel& translation, const ServedModel& lm, double weight);

struct WorkerOptions {
  BatchLimits batching;
  DType dtype = DType::f32;
};

/// What a job produces: n-best lists (translation) or a JSON text (scoring); when it failed, the HTTP
/// status (400 for a RequestError found on the worker, 500 for a model error), the field and the message.
struct JobResult {
  std::vector<std::vector<Hypothesis>> hypotheses;
  std::string json;
  int status = 200;
  std::string error_field, error;
};

/// The equality that decides which jobs may be decoded together.
struct BatchKey {
  size_t model = 0;
  uint64_t alone = 0;     // non-zero: a job that runs by itself (scoring)
  bool generate = false;  // prompts a language model continues (/v1/generate), not sentences to translate
  BeamOptions search{};  // n_best = beam: each job keeps its own first n_best of the sorted list
  ExpertChoice experts = ExpertChoice::mixture;
  bool alignment = false;  // the hypotheses' word alignments (translator/alignment.h)
  std::optional<size_t> lm{};  // a served language model fused in, with its weight (fused_lm)
  double lm_weight = 0;
  bool operator==(const BatchKey&) const = default;
};

/// Whether the client of a job has left (hung up); called by the worker's thread when it takes the job.
using ClientGone = std::function<bool()>;

struct JobState {
  std::vector<std::vector<int32_t>> sources;  // translation: source sentences; generation: prompts
  TargetPrefixes prefixes;                    // none, or one per source
  int n_best = 1;
  std::function<std::string()> run;  // scoring: computes the JSON on the worker's thread
  std::promise<JobResult> result;
  std::atomic<bool> abandoned{false};  // set by the HTTP layer: its client timed out or hung up
  ClientGone client_gone;              // none: only `abandoned` says
  /// Whether nobody waits for the result any more: skip the job.
  bool given_up() const { return abandoned.load() || (client_gone && client_gone()); }
};

struct Job {
  BatchKey key;
  int64_t tokens = 0, lines = 0;
  std::shared_ptr<JobState> state;
};

/// A job handed to the worker: whether the queue took it, and then its state and result.
struct Submitted {
  PushResult pushed = PushResult::closed;
  std::shared_ptr<JobState> state;
  std::future<JobResult> result;
};

class Worker {
 public:
  Worker(std::vector<ServedModel>& models, Device device, WorkerOptions options, ServerMetrics& metrics);
  ~Worker();  // closes and joins

  /// Queues the translation of `sources` (ids of the request's lines, in order) with `request`'s options (its
  /// fused language model checked by fused_lm, a RequestError thrown here), each output beginning with its prefix
  /// in `prefixes` (none, or one per source). Each function takes
  /// the job's `client_gone` (JobState), asked when the job is taken.
  Submitted translate(size_t model, const TranslateRequest& request, std::vector<std::vector<int32_t>> sources,
                      TargetPrefixes prefixes = {}, ClientGone client_gone = {});
  /// Queues the continuation of `prompts` (ids of the request's lines, in order) by language model `model`.
  Submitted generate(size_t model, const GenerateRequest& request, std::vector<std::vector<int32_t>> prompts,
                     ClientGone client_gone = {});
  /// Queues `work` (scoring on model `model`), run alone on the worker's thread.
  Submitted run_alone(size_t model, int64_t lines, std::function<std::string()> work, ClientGone client_gone = {});
  /// Stops taking jobs; the worker finishes those queued, then ends. Joins it.
  void close();
  int64_t queued_lines() const { return queue_.lines(); }
  Device device() const { return device_; }

 private:
  void loop();
  void decode(std::vector<Job>& jobs);
  Submitted submit(Job job, ClientGone client_gone);
  /// A job of `lines` (sources or prompts) searched with `search`, of which the job keeps n_best.
  static Job search_job(BatchKey key, const BeamOptions& search, std::vector<std::vector<int32_t>> lines);

  std::vector<ServedModel>& models_;
  Device device_;
  WorkerOptions options_;
  ServerMetrics& metrics_;
  BatchQueue<Job> queue_;
  std::atomic<uint64_t> next_alone_{1};
  std::thread thread_;
};

}  // namespace moe::serving
