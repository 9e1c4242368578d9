// moe-score ppl / pairs / experts (see model_commands.h). ppl prints "PPL = x (...)" (or the number
// alone with --score-only, or JSON), with the validation windows a moe-train checkpoint stores unless
// --context / --stride say otherwise; pairs prints one "log_prob<TAB>tokens" line per pair (with --alignment a
// further field, the pair's word alignment: translator/pair_alignment.h; with --word-scores then its tokens'
// log-probs, Marian's scorer's --word-scores) and the corpus summary on stderr
// (--summary prints only the summary, on stdout), and with several -m scores their ensemble step by step
// (translator/stepwise_scores.h, --weights; the first model aligns), as it does with a language model fused in
// (--lm, --lm-weight: log p_tm + weight x log p_lm, token by token); experts prints the gate
// statistics of translator/expert_report.h: translation models are run teacher-forced on --src/--tgt,
// or, given only -i SRC, on their own translations (beam search with moe-translate's search flags);
// language models over the windows of ppl. pairs and experts take --mae-inference like moe-translate
// (cli/mae_inference_option.h); --device, --dtype, --max-tokens and the search flags are the shared
// decoding options (cli/decoding_options.h). Every model command warns on stderr when the model's MAE gates see
// future target tokens in its teacher-forced passes (Model::future_sites: MAE gate_input paper; not in the stepwise
// scores of an ensemble or a fused LM, whose decoding caches make those gates read the prefix's mean). On SIGTERM,
// SIGINT or SIGUSR1 they stop after the batch in flight, having written nothing (exit status 75). The flags, stop
// points and score lines they share with `sentences` are model_options.h's.
// Covered by tests/translator/scoring_test.cpp, experts_command_test.cpp, mae_scoring_test.cpp and
// lm_fusion_test.cpp.
#include "moe-score/model_commands.h"

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/alignment_option.h"
#include "cli/enum_option.h"
#include "cli/mae_inference_option.h"
#include "common/progress_meter.h"
#include "metrics/read_lines.h"
#include "models/checkpoint.h"
#include "moe-score/model_options.h"
#include "translator/expert_report.h"
#include "translator/lm_perplexity.h"
#include "translator/pair_alignment.h"
#include "translator/pair_scores.h"
#include "translator/stepwise_scores.h"
#include "translator/translate_text.h"
#include "translator/translation_models.h"

namespace moe {

namespace {
/// The LM windows moe-train's validation stored in `ck`, unless the options were given.
void stored_windows(const LoadedCheckpoint& ck, const CLI::Option& context_opt, const CLI::Option& stride_opt,
                    int64_t& context, int64_t& stride) {
  if (context_opt.count() == 0 && ck.metadata.count("moe.valid.context")) {
    context = std::stoll(ck.metadata.at("moe.valid.context"));
    if (stride_opt.count() == 0 && ck.metadata.count("moe.valid.stride"))
      stride = std::stoll(ck.metadata.at("moe.valid.stride"));
  }
}

struct PplArgs {
  ModelOptions m;
  std::string input = "-", format = "text";
  PerplexityOptions opt;
  bool score_only = false;
  double log_every = 30;
};

}  // namespace

cli::SubcommandRunner setup_ppl(CLI::App& sub) {
  auto a = std::make_shared<PplArgs>();
  add_model_options(sub, a->m);
  sub.add_option("-i,--input", a->input, "text to score, one line per line ('-' = stdin)")->capture_default_str();
  CLI::Option* context =
      sub.add_option("--context", a->opt.context,
                     "window length (tokens of history + scored); default: the windows of moe-train's validation "
                     "stored in the checkpoint, else 512");
  CLI::Option* stride = sub.add_option("--stride", a->opt.stride,
                                       "targets scored per later window (0 = context / 2); default: as --context");
  sub.add_option("--batch-size", a->opt.batch_size, "windows per forward pass")->capture_default_str();
  sub.add_option("-f,--format", a->format, "output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub.add_flag("-b,--score-only", a->score_only, "print only the perplexity");
  sub.add_option("--log-every", a->log_every,
                 "seconds between progress lines on stderr when it is not a terminal (0 = none; on a terminal one "
                 "line is redrawn in place)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  return [a, context, stride](std::ostream& out, std::ostream& err) {
    const auto [device, dtype] = placement(a->m, "ppl");
    a->opt.dtype = dtype;
    LoadedCheckpoint ck = load_checkpoint(a->m.model(), device);
    const InferenceWeights weights(ck, a->m.quantize, device);
    stored_windows(ck, *context, *stride, a->opt.context, a->opt.stride);
    MOE_CHECK(ck.model->is_language_model(), "'", a->m.model(), "' holds a ", ck.model->type(),
              " (translation) model; use moe-score pairs for translation models");
    warn_future_gates(ck, "ppl", "this perplexity", err);
    const data::Vocab& vocab = ck.first_vocab({"lm", "tgt", "src"});
    const auto lines = metrics::read_lines(a->input);
    const auto stream = lm_stream_of(lines, vocab);
    ProgressMeter progress(err, {.name = "moe-score ppl",
                                 .unit = "tokens",
                                 .total = int64_t(stream.size()),
                                 .log_every = a->log_every,
                                 .terminal = stderr_is_terminal()});
    PerplexityOptions opt = a->opt;
    opt.progress = [&progress, stop = stop_points("ppl")](int64_t tokens) {
      progress.update(tokens);
      stop();
    };
    PerplexityResult r = lm_perplexity(*ck.model, *ck.params, device, stream, opt, vocab.eos_id(), vocab.pad_id());
    progress.finish();
    r.lines = static_cast<int64_t>(lines.size());
    for (const auto& l : lines) r.words += count_words(l);
    const int64_t stride = a->opt.stride > 0 ? a->opt.stride : std::max<int64_t>(1, a->opt.context / 2);
    if (a->format == "json") {
      out << "{\n \"name\": \"PPL\",\n \"score\": " << num(r.ppl(), 4) << ",\n \"tokens\": " << r.tokens
          << ",\n \"nll_per_token\": " << num(r.nll / static_cast<double>(std::max<int64_t>(r.tokens, 1)), 6)
          << ",\n \"word_ppl\": " << num(r.word_ppl(), 4) << ",\n \"words\": " << r.words
          << ",\n \"lines\": " << r.lines << ",\n \"context\": " << a->opt.context << ",\n \"stride\": " << stride
          << "\n}\n";
    } else if (a->score_only) {
      out << num(r.ppl(), 4) << "\n";
    } else {
      out << "PPL = " << num(r.ppl(), 4) << " (" << r.tokens << " tokens, nll/token "
          << num(r.nll / static_cast<double>(std::max<int64_t>(r.tokens, 1)), 6) << "; word PPL "
          << num(r.word_ppl(), 4) << " over " << r.words << " words + " << r.lines << " </s>; context "
          << a->opt.context << ", stride " << stride << ")\n";
    }
    return 0;
  };
}

struct PairsArgs {
  ModelOptions m;
  std::string src, tgt;
  PairScoreOptions opt;
  bool summary = false;
  std::optional<AlignmentOutput> alignment;
  bool word_scores = false;
};

cli::SubcommandRunner setup_pairs(CLI::App& sub) {
  auto a = std::make_shared<PairsArgs>();
  add_model_options(sub, a->m, true, {"max_tokens"});
  sub.get_option("--max-tokens")->description("padded (source + target) tokens per batch");
  sub.add_option("--src", a->src, "source sentences, one per line")->required();
  sub.add_option("--tgt", a->tgt, "their translations, line-aligned")->required();
  CLI::Option* summary = sub.add_flag("--summary", a->summary, "print only the corpus summary (on stdout)");
  cli::add_alignment_option(sub, a->alignment, "write each pair's word alignment as a third field")->excludes(summary);
  sub.add_flag("--word-scores", a->word_scores,
               "write each target token's log-probability (natural log, </s>'s last; they sum to the pair's) as a "
               "further field, after the alignment when both (Marian's scorer's --word-scores)")
      ->excludes(summary);
  cli::add_mae_inference_option(sub, a->opt.experts);
  return [a](std::ostream& out, std::ostream& err) {
    const auto [device, dtype] = placement(a->m, "pairs");
    a->opt.dtype = dtype;
    a->opt.max_tokens = scoring_batch_tokens(a->m.decoding);
    a->opt.after_batch = stop_points("pairs");
    const auto src_lines = metrics::read_lines(a->src), tgt_lines = metrics::read_lines(a->tgt);
    MOE_CHECK(src_lines.size() == tgt_lines.size(), "'", a->src, "' has ", src_lines.size(), " lines but '", a->tgt,
              "' has ", tgt_lines.size());
    std::vector<PairScore> scores;
    std::vector<SoftAlignment> alignments;
    std::vector<TokenWords> words;  // with --alignment-words
    // The pairs' word alignments from `decoder` (an ensemble's: its first model's), when asked for.
    const auto align = [&](const Decoder* decoder, ParameterStore& params, const auto& src, const auto& tgt,
                           const data::Vocab& src_vocab, const data::Vocab& tgt_vocab) {
      if (!a->alignment) return;
      MOE_CHECK(decoder, "'", a->m.model(), "' holds a model without a decoder over the source: it cannot align");
      alignments = align_pairs(*decoder, params, device, src, tgt, a->opt);
      if (a->alignment->words)
        for (size_t i = 0; i < src.size(); ++i)
          words.push_back({token_words(src_vocab, src[i]), token_words(tgt_vocab, tgt[i])});
    };
    if (a->m.models.size() > 1 || !a->m.lm.path.empty()) {  // an ensemble or a fused LM: step by step
      const TranslationModels models =  // incremental steps: MAE gates read the prefix's mean, nothing to warn about
          load_translation_models(a->m.models, a->m.weights, device, a->m.quantize, a->m.lm);
      const auto src = encode_lines(src_lines, models.src_vocab()), tgt = encode_lines(tgt_lines, models.tgt_vocab());
      scores = score_pairs_stepwise(models.decoder(), models.params(), device, src, tgt, a->opt);
      align(&models.decoder(), models.params(), src, tgt, models.src_vocab(), models.tgt_vocab());
    } else {  // one model: its teacher-forced pass
      check_ensemble_weights(a->m.models, a->m.weights);
      LoadedCheckpoint ck = load_checkpoint(a->m.model(), device);
      const InferenceWeights weights(ck, a->m.quantize, device);
      MOE_CHECK(!ck.model->is_language_model(), "'", a->m.model(), "' holds a ", ck.model->type(),
                " language model; use moe-score ppl for language models");
      warn_future_gates(ck, "pairs", "these log-probabilities", err);
      const data::Vocab &src_vocab = ck.first_vocab({"src", "tgt"}), &tgt_vocab = ck.first_vocab({"tgt", "src"});
      const auto src = encode_lines(src_lines, src_vocab), tgt = encode_lines(tgt_lines, tgt_vocab);
      scores = score_pairs(*ck.model, *ck.params, device, src, tgt, a->opt);
      align(ck.model->encoder_decoder(), *ck.params, src, tgt, src_vocab, tgt_vocab);
    }
    write_score_lines(out, err, scores,
                      {.cmd = "pairs",
                       .unit = "target tokens",
                       .summary = a->summary,
                       .word_scores = a->word_scores,
                       .extra = !a->alignment ? std::function<std::string(size_t)>()
                                              : [&](size_t i) {
                                                  return format_alignment(alignments[i], *a->alignment,
                                                                          words.empty() ? TokenWords() : words[i]);
                                                },
                       .model = a->m.model()});
    return 0;
  };
}

struct ExpertsArgs {
  ModelOptions m;
  std::string input, src, tgt, format = "text";
  ExpertAnalysisOptions opt;
  int64_t min_count = 5;
  int top = 10;
};

cli::SubcommandRunner setup_experts(CLI::App& sub) {
  auto a = std::make_shared<ExpertsArgs>();
  std::vector<std::string> keys = best_hypothesis_search_keys();  // the best translation is analysed
  keys.push_back("max_tokens");
  add_model_options(sub, a->m, false, keys);
  sub.get_option("--beam")->description("beam size of the translations of -i (1 = greedy)");
  sub.get_option("--max-tokens")->description("padded tokens per batch");
  sub.add_option("-i,--input", a->input,
                 "language models: running text; translation models: source sentences, translated first "
                 "(--beam) unless --tgt is given");
  sub.add_option("--src", a->src, "translation: source sentences (teacher forcing with --tgt)");
  sub.add_option("--tgt", a->tgt, "translation: their translations, line-aligned");
  CLI::Option* context = sub.add_option("--context", a->opt.context,
                                        "language models: window length; default: the checkpoint's validation "
                                        "windows, else 512");
  CLI::Option* stride = sub.add_option("--stride", a->opt.stride, "language models: targets per later window");
  sub.add_option("--min-count", a->min_count, "PMI: tokens seen fewer times are left out")->capture_default_str();
  sub.add_option("--top", a->top, "PMI: tokens listed per expert")->capture_default_str();
  cli::add_enum_option(sub, "--attribution", a->opt.attribution,
                       "PMI events: argmax (one per token or sentence, its argmax expert) or routed (one per routed "
                       "(token, slot) pair of top-k routers)");
  cli::add_enum_option(sub, "--unit", a->opt.unit, "PMI tokens: vocabulary pieces or words");
  sub.add_option("-f,--format", a->format, "text, or json (one object per site, then a summary)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cli::add_mae_inference_option(sub, a->opt.experts);
  return [a, context, stride](std::ostream& out, std::ostream& err) {
    MOE_CHECK(a->min_count >= 1 && a->top >= 0, "experts: --min-count ", a->min_count, " and --top ", a->top,
              " must be >= 1 and >= 0");
    const auto [device, dtype] = placement(a->m, "experts");
    a->opt.dtype = dtype;
    a->opt.max_tokens = scoring_batch_tokens(a->m.decoding);
    a->opt.model_name = a->m.model();
    a->opt.after_batch = stop_points("experts");
    LoadedCheckpoint ck = load_checkpoint(a->m.model(), device);
    const InferenceWeights weights(ck, a->m.quantize, device);
    warn_future_gates(ck, "experts", "the gates and states analysed here", err);
    ExpertReport report;
    report.model = a->m.model();
    report.model_type = ck.model->type();
    report.site_types = ck.model->site_types();
    report.min_count = a->min_count;
    report.top = a->top;
    if (ck.model->is_language_model()) {
      MOE_CHECK(!a->input.empty() && a->src.empty() && a->tgt.empty(), "experts: '", a->m.model(), "' holds a ",
                ck.model->type(), " language model: give its text with -i (not --src/--tgt)");
      stored_windows(ck, *context, *stride, a->opt.context, a->opt.stride);
      const data::Vocab& vocab = ck.first_vocab({"lm", "tgt", "src"});
      const auto lines = metrics::read_lines(a->input);
      MOE_CHECK(!lines.empty(), "experts: '", a->input, "' is empty");
      ExpertCollector c(a->opt);
      report.input = "lm";
      report.info = collect_lm(*ck.model, *ck.params, device, lm_stream_of(lines, vocab), vocab, c);
      report.sites = c.summaries(a->min_count, a->top);
    } else {
      const std::string src_path = a->src.empty() ? a->input : a->src;
      MOE_CHECK(!src_path.empty() && (a->src.empty() || a->input.empty()), "experts: '", a->m.model(),
                "' holds a translation model: give --src S --tgt T, or -i SRC (translated first)");
      const data::Vocab& sv = ck.first_vocab({"src", "tgt"});
      const data::Vocab& tv = ck.first_vocab({"tgt", "src"});
      const auto src_lines = metrics::read_lines(src_path);
      MOE_CHECK(!src_lines.empty(), "experts: '", src_path, "' is empty");
      auto src = encode_lines(src_lines, sv);
      std::vector<std::vector<int32_t>> tgt;
      int64_t truncated = 0;
      if (!a->tgt.empty()) {
        const auto tgt_lines = metrics::read_lines(a->tgt);
        MOE_CHECK(src_lines.size() == tgt_lines.size(), "'", src_path, "' has ", src_lines.size(), " lines but '",
                  a->tgt, "' has ", tgt_lines.size());
        tgt = encode_lines(tgt_lines, tv);
        report.input = "pairs";
      } else {
        TranslatorOptions to = translator_options(a->m.decoding);
        to.search.n_best = 1;
        to.scores = false;
        to.experts = a->opt.experts;
        to.search.unk_id = tv.unk_id();
        const EncoderDecoder* net = ck.model->encoder_decoder();
        MOE_CHECK(net, "experts: a ", ck.model->type(), " model has no encoder-decoder to translate with");
        const Translator translator(*net, *ck.params, device, to);
        for (auto& s : src) {
          if (static_cast<int64_t>(s.size()) <= translator.max_source_tokens()) continue;
          s.resize(static_cast<size_t>(translator.max_source_tokens()));
          ++truncated;
        }
        for (const auto& nbest : translator.translate(src, [&](int64_t, int64_t) { a->opt.after_batch(); }))
          tgt.push_back(nbest.empty() ? std::vector<int32_t>{} : nbest[0].tokens);
        report.input = "hypotheses";
      }
      ExpertCollector c(a->opt);
      report.info = collect_pairs(*ck.model, *ck.params, device, std::move(src), std::move(tgt), sv, tv, c);
      report.info.truncated += truncated;
      report.sites = c.summaries(a->min_count, a->top);
    }
    report.options = a->opt;
    if (a->format == "json")
      write_expert_json(out, report);
    else
      write_expert_text(out, report);
    return 0;
  };
}
}  // namespace moe
