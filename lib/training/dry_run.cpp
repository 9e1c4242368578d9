// dry_run.h implementation, part 1: vocabulary sizes, the synthetic batch, the lazy graph of one
// training batch, parameters and experts, updates per epoch, the schedule. The memory and FLOP
// counts over the graph are dry_run_count.cpp; the printed report dry_run_report.cpp.
// Covered by tests/training/dry_run_test.cpp.
#include "training/dry_run.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "common/error.h"
#include "data/vocab.h"
#include "graph/graph.h"
#include "layers/sites.h"
#include "models/model_registry.h"
#include "training/dry_run_count.h"

namespace moe {

namespace {
namespace fs = std::filesystem;

/// The size of the vocabulary at `path` (when the file exists), else `fallback` (error when 0).
int64_t vocab_size(const std::string& path, int64_t fallback, const std::string& key, const DryRunOptions& dry) {
  if (dry.vocab > 0) return dry.vocab;
  if (!path.empty() && fs::exists(path)) return data::load_vocab(path)->size();
  MOE_CHECK(fallback > 0, "moe-train --dry-run: the vocabulary size is unknown: ", key, " '", path,
            "' does not exist and data.vocab.size is not set; give --dry-run-vocab N");
  return fallback;
}

/// The routed site whose parameters `name` is one of ("<prefix>.<expert leaf>"), or nullptr.
const ModelRoutedSite* expert_site_of(const std::string& name, const std::vector<ModelRoutedSite>& sites) {
  for (const ModelRoutedSite& s : sites)
    for (const std::string& leaf : s.site.expert_params)
      if (name == s.prefix + "." + leaf) return &s;
  return nullptr;
}

/// Updates per epoch from the data (-1 when the data or a vocabulary is missing).
int64_t count_updates(const TrainOptions& o, const YAML::Node& section, int ranks) {
  const DataOptions& d = o.data;
  const std::vector<std::string> needed =
      o.task == TrainTaskKind::translation
          ? std::vector<std::string>{d.train_src, d.train_tgt, d.src_vocab, d.tgt_vocab}
          : std::vector<std::string>{d.train_text, d.vocab_path};
  for (const std::string& f : needed)
    if (f.empty() || !fs::exists(f)) return -1;
  TrainOptions global = o;  // the global batch of `ranks` ranks, as the trainer's task sees it
  global.max_tokens = o.max_tokens * ranks;
  global.max_sentences = o.max_sentences * ranks;
  global.data.valid_src = global.data.valid_tgt = global.data.valid_text = "";
  global.valid.bleu = false;
  data::BatchUploader uploader(Device::cpu());
  const std::unique_ptr<TrainTask> task = make_train_task(global, uploader, {});
  const std::unique_ptr<Model> model = create_model(task->prepare(section));
  task->attach(*model);
  task->load_data();
  return task->updates_per_epoch(o.update_freq);
}

std::string describe_schedule(const TrainOptions& o, int64_t updates_per_epoch) {
  const ScheduleOptions& s = o.schedule;
  std::string text = fmt::format("{} at lr {}, {} warm-up updates", enum_name(s.kind), s.lr, s.warmup_updates);
  if (LrSchedule(s).needs_updates_per_epoch())
    text += updates_per_epoch > 0
                ? fmt::format(", decaying over {} epochs x {} updates = {} updates", s.max_epochs, updates_per_epoch,
                              s.max_epochs * updates_per_epoch)
                : fmt::format(", decaying over {} epochs (their updates: unknown without the data)", s.max_epochs);
  else if (s.kind == LrScheduleKind::cosine || s.kind == LrScheduleKind::linear)
    text += fmt::format(", decaying over {} updates", s.max_updates);
  const std::string stop = o.max_updates > 0  ? fmt::format("{} updates", o.max_updates)
                           : o.max_epochs > 0 ? fmt::format("{} epochs", o.max_epochs)
                                              : fmt::format("{} minutes", o.max_minutes);
  return text + "; training stops after " + stop;
}
}  // namespace

YAML::Node dry_run_model_section(const TrainOptions& o, const DryRunOptions& dry) {
  const DataOptions& d = o.data;
  YAML::Node m = YAML::Clone(o.model);
  if (o.task == TrainTaskKind::translation) {
    m["src_vocab"] = vocab_size(d.src_vocab, d.vocab_size, "data.vocab.src", dry);
    m["tgt_vocab"] = d.tgt_vocab == d.src_vocab ? m["src_vocab"].as<int64_t>()
                                                : vocab_size(d.tgt_vocab, d.vocab_size, "data.vocab.tgt", dry);
  } else {
    const int64_t fallback = d.vocab_type == VocabType::word ? d.vocab_max_words : d.vocab_size;
    const int64_t v = vocab_size(d.vocab_path, fallback, "data.vocab.path", dry);
    m["vocab"] = v + (o.task == TrainTaskKind::masked_lm ? 1 : 0);  // <mask> appended (at most one more)
  }
  return m;
}

TrainBatch dry_run_batch(const TrainOptions& o, const YAML::Node& config) {
  const int32_t pad = config["pad_id"] ? config["pad_id"].as<int32_t>() : 0;
  if (o.task == TrainTaskKind::translation) {
    const int64_t positions = config["max_positions"] ? config["max_positions"].as<int64_t>() - 1 : 0;
    int64_t len = o.data.max_len > 0 && positions > 0 ? std::min(o.data.max_len, positions)
                                                      : std::max<int64_t>(o.data.max_len, positions);
    if (len <= 0) len = 256;
    len = std::max<int64_t>(1, std::min(len, o.max_tokens - 1));
    int64_t rows = std::max<int64_t>(1, o.max_tokens / (len + 1));
    if (o.max_sentences > 0) rows = std::min(rows, o.max_sentences);
    const std::vector<int32_t> sentence(static_cast<size_t>(len), 5);
    std::vector<std::span<const int32_t>> spans(static_cast<size_t>(rows), std::span<const int32_t>(sentence));
    std::vector<int64_t> ids(static_cast<size_t>(rows));
    const int32_t bos = config["bos_id"] ? config["bos_id"].as<int32_t>() : 2;
    const int32_t eos = config["eos_id"] ? config["eos_id"].as<int32_t>() : 3;
    return TrainBatch{data::make_batch(spans, spans, ids, pad, bos, eos)};
  }
  const int64_t len = o.data.tokens_per_sample;
  int64_t rows = std::max<int64_t>(1, o.max_tokens / len);
  if (o.max_sentences > 0) rows = std::min(rows, o.max_sentences);
  const bool masked = o.task == TrainTaskKind::masked_lm;
  const int64_t every = masked ? std::max<int64_t>(1, std::llround(1.0 / o.data.mlm.mask_prob)) : 1;
  std::vector<std::vector<int32_t>> in(static_cast<size_t>(rows), std::vector<int32_t>(static_cast<size_t>(len), 5));
  std::vector<std::vector<int32_t>> tgt(in.size(), std::vector<int32_t>(static_cast<size_t>(len), 6));
  std::vector<std::vector<float>> mask(in.size(), std::vector<float>(static_cast<size_t>(len), 0.f));
  for (auto& row : mask)
    for (size_t j = 0; j < row.size(); j += static_cast<size_t>(every)) row[j] = 1.f;
  return TrainBatch{data::make_lm_batch(in, tgt, mask, std::vector<int64_t>(in.size()), pad)};
}

DryRunReport dry_run(const TrainOptions& o, const DryRunOptions& dry) {
  DryRunReport r;
  // Built without a communicator, every MoE layer declares all its experts (one process's layout).
  const std::unique_ptr<Model> model = create_model(dry_run_model_section(o, dry));
  const YAML::Node config = model->config_yaml();
  r.model_type = model->type();
  r.src_vocab = config["src_vocab"] ? config["src_vocab"].as<int64_t>() : config["vocab"].as<int64_t>();
  r.tgt_vocab = config["tgt_vocab"] ? config["tgt_vocab"].as<int64_t>() : r.src_vocab;
  // What the routed sites say of themselves (layers/sites.h): E, experts per token, expert parameters.
  const std::vector<ModelRoutedSite> sites = model->routed_sites();
  const RoutedSite* first = sites.empty() ? nullptr : &sites.front().site;
  r.experts = first ? first->experts : 0;
  r.active = first ? first->active : 0;
  r.shared = first ? first->shared : 0;
  for (const ModelRoutedSite& s : sites)
    if (s.site.experts != r.experts || s.site.active != r.active) r.mixed_sites = true;
  const int per_rank = first ? first->experts_per_rank : 0;
  r.ranks = dry.ranks > 0 ? dry.ranks : per_rank > 0 ? r.experts / per_rank : 1;
  MOE_CHECK(per_rank == 0 || r.ranks * per_rank == r.experts, "moe-train --dry-run: experts_per_rank ", per_rank,
            " with ", r.experts, " experts needs ", r.experts / std::max(1, per_rank), " ranks, not ", r.ranks);

  ParameterStore store(Device::cpu(), o.seed);  // declared, never allocated
  const DType compute = o.dtype_auto ? (dry.gpu ? DType::bf16 : DType::f32) : o.dtype;
  Graph g(Device::cpu(), &store, GraphOptions{.training = true, .compute_dtype = compute, .seed = o.seed});
  const TrainBatch batch = dry_run_batch(o, config);
  Builder b(g);
  Expr loss = o.task == TrainTaskKind::translation
                  ? model->loss(b, std::get<data::Batch>(batch.data), o.label_smoothing)
                  : model->lm_loss(b, std::get<data::LmBatch>(batch.data), o.label_smoothing);
  loss = b.objective(loss, batch.tokens());
  r.batch_rows = batch.size();
  r.batch_targets = batch.tokens();
  r.batch_length = o.task == TrainTaskKind::translation ? std::get<data::Batch>(batch.data).tgt_out.shape()[1]
                                                        : std::get<data::LmBatch>(batch.data).input.shape()[1];

  double inactive = 0;  // expert parameters a token does not use: (1 - active / E) of each site's
  std::map<std::string, int64_t> per_site;
  for (const ParamEntry& e : store.entries()) {
    if (e.state) continue;
    r.parameters += e.shape.numel();
    const ModelRoutedSite* s = expert_site_of(e.name, sites);
    if (!s || e.shape.ndim() < 2 || e.shape[0] != s->site.experts) continue;
    r.expert_parameters += e.shape.numel();
    per_site[s->prefix] += e.shape.numel();
    inactive += static_cast<double>(e.shape.numel()) * (1 - std::min(1.0, s->site.active / s->site.experts));
  }
  if (!sites.empty() && per_site.count(sites.front().prefix)) r.per_expert = per_site[sites.front().prefix] / r.experts;
  r.active_per_token = r.parameters - static_cast<int64_t>(std::llround(inactive));
  std::vector<int64_t> widths = {r.tgt_vocab};
  if (const int64_t k = config["sampled_softmax"] ? config["sampled_softmax"].as<int64_t>() : 0; k > 0)
    widths.insert(widths.end(), {k, k + 1});
  const GraphCounts counts = count_graph(g, widths, dry.gpu);
  r.forward_flops_per_token = counts.forward_flops / static_cast<double>(std::max<int64_t>(1, r.batch_targets));
  r.train_flops_per_token = 3 * r.forward_flops_per_token;
  r.updates_per_epoch = dry.count_updates ? count_updates(o, dry_run_model_section(o, dry), r.ranks) : -1;
  r.schedule = describe_schedule(o, r.updates_per_epoch);
  r.memory = memory_terms(o, store, counts, r, dry.gpu, per_rank);
  r.validation_bytes = validation_bytes(o, r, config, compute, dry.gpu);
  r.budget = dry.memory_bytes;
  return r;
}

}  // namespace moe
