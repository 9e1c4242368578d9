// translate_cli.h implementation: option parsing (CLI11), checkpoint loading, chunked streaming
// translation and the throughput summary; a stop signal ends it after the batch in flight with complete lines
// only (exit status 75). Covered by tests/translator/translate_cli_test.cpp and tests/scripts/train_signals.sh.
#include "moe-translate/translate_cli.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/alignment_option.h"
#include "cli/decoding_options.h"
#include "cli/ensemble_options.h"
#include "cli/enum_option.h"
#include "cli/mae_inference_option.h"
#include "cli/program.h"
#include "cli/text_streams.h"
#include "common/progress_meter.h"
#include "common/stop_signal.h"
#include "tensor/allocator.h"
#include "translator/input_lines.h"
#include "translator/translate_text.h"
#include "translator/translation_models.h"

namespace moe {

namespace {
/// Lines of a file (for the progress total); -1 for standard input, which is read once.
int64_t count_lines(const std::string& path) {
  if (path == "-") return -1;
  std::ifstream f(path, std::ios::binary);
  int64_t n = 0;
  char last = '\n';
  for (char buf[1 << 16]; f.read(buf, sizeof buf) || f.gcount() > 0;) {
    for (std::streamsize i = 0; i < f.gcount(); ++i) n += buf[i] == '\n';
    last = buf[f.gcount() - 1];
  }
  return n + (last != '\n');
}

/// --prefix FILE read in step with the input: one line per input line, and no line more or less.
class PrefixLines {
 public:
  PrefixLines(const std::string& path, const std::string& input) : path_(path) {
    if (path.empty()) return;
    file_.open(path, std::ios::binary);
    MOE_CHECK(file_.is_open(), "cannot open --prefix '", path, "'");
    lines_.emplace(file_, path);
    if (input != "-") {  // a file: a mismatch fails before anything is translated
      const int64_t p = count_lines(path), n = count_lines(input);
      MOE_CHECK(p == n, "--prefix '", path, "' has ", p, " lines but the input '", input, "' has ", n,
                " (one prefix per input line; an empty line forces nothing)");
    }
  }
  /// The prefixes of the next `n` input lines (none without --prefix).
  std::vector<std::string> next(size_t n, int64_t lines_before) {
    std::vector<std::string> out;
    if (!lines_) return out;
    lines_->next_chunk(static_cast<int64_t>(n), out);
    MOE_CHECK(out.size() == n, "--prefix '", path_, "' has ", lines_->lines(), " lines but the input has at least ",
              lines_before + static_cast<int64_t>(n), " (one prefix per input line)");
    return out;
  }
  /// After the last input line: the prefix file must be at its end too.
  void finish(int64_t input_lines) {
    std::vector<std::string> rest;
    MOE_CHECK(!lines_ || !lines_->next_chunk(1, rest), "--prefix '", path_, "' has more lines than the input's ",
              input_lines, " (one prefix per input line)");
  }

 private:
  std::string path_;
  std::ifstream file_;
  std::optional<InputLines> lines_;
};
}  // namespace

void run_translate(const TranslateCliOptions& o, std::istream& in, std::ostream& out, std::ostream& err) {
  const auto t0 = std::chrono::steady_clock::now();
  MOE_CHECK(o.chunk_lines >= 1, "--chunk-lines must be positive, got ", o.chunk_lines);
  check_decoding_options(o.decoding, cli::flag_naming());
  const Device device = decoding_placement(o.decoding, cli::flag_naming()).device;
  TranslatorOptions to = translator_options(o.decoding);
  to.experts = o.mae_inference;
  to.scores = to.search.n_best > 1 || o.word_scores;  // printed with the n-best lists (translate_text.h)
  to.alignment = o.alignment.has_value();

  const TranslationModels models = load_translation_models(o.models, o.weights, device, o.quantize, o.lm);
  const data::Vocab& src_vocab = models.src_vocab();
  const data::Vocab& tgt_vocab = models.tgt_vocab();
  to.search.unk_id = tgt_vocab.unk_id();
  std::unique_ptr<Shortlist> shortlist;
  if (o.shortlist) {
    const LoadedCheckpoint& last = models.checkpoints.back();  // the fused LM's, when there is one
    MOE_CHECK(o.lm.path.empty() || has_output_weight(*last.model->decoder(), *last.params),
              "--shortlist: the language model of --lm '", o.lm.path,
              "' has an adaptive softmax, whose output a shortlist cannot restrict (fuse it without --shortlist)");
    std::string summary;
    shortlist = cli::load_shortlist(*o.shortlist, src_vocab, tgt_vocab, summary);
    to.shortlist = shortlist.get();
    if (!o.quiet) err << "moe-translate: shortlist " << summary << "\n";
  }
  Translator translator(models.decoder(), models.params(), device, to);

  cli::TextStreams streams(o.input, o.output, in, out);
  std::istream* is = &streams.in();
  std::ostream* os = &streams.out();

  const auto t1 = std::chrono::steady_clock::now();
  ProgressMeter progress(err, {.name = "moe-translate",
                               .unit = "lines",
                               .total = count_lines(o.input),
                               .log_every = o.quiet ? 0 : o.log_every,
                               .terminal = !o.quiet && stderr_is_terminal()});
  int64_t done_lines = 0, done_tokens = 0, written_lines = 0;
  TranslateStats stats;
  // SIGTERM / SIGINT / SIGUSR1: stop after the batch in flight; the chunk being translated is dropped, so
  // every line written is a whole translation of the input line of the same number.
  const auto stop_point = [&] {
    throw_if_stopped("moe-translate",
                     detail::concat(": the translations of the first ", written_lines, " input line(s) are written to ",
                                    o.output == "-" ? "standard output" : o.output,
                                    ", each complete; the rest is not translated (continue with the input from line ",
                                    written_lines + 1, ")"));
  };
  const auto on_batch = [&](int64_t sentences, int64_t tokens) {
    progress.update(done_lines += sentences, done_tokens += tokens);
    stop_point();
  };
  InputLines input(*is, o.input);
  PrefixLines prefixes(o.prefix, o.input);
  std::vector<std::string> chunk;
  while (input.next_chunk(o.chunk_lines, chunk)) {
    stop_point();
    const int64_t first = stats.lines;
    const std::vector<std::string> chunk_prefixes = prefixes.next(chunk.size(), first);
    for (const std::string& r : translate_lines(translator, src_vocab, tgt_vocab, chunk, o.decoding.search.n_best,
                                                first, stats, on_batch, chunk_prefixes, {o.alignment, o.word_scores}))
      *os << r << '\n';
    done_lines = stats.lines;  // empty lines too (they are not decoded)
    os->flush();
    MOE_CHECK(os->good(), "error writing '", o.output, "'");
    written_lines = stats.lines;
  }
  prefixes.finish(stats.lines);
  const auto t2 = std::chrono::steady_clock::now();
  progress.finish();
  if (!input.warning().empty()) err << "moe-translate: warning: " << input.warning() << '\n';
  if (stats.truncated > 0)
    err << "moe-translate: warning: " << stats.truncated << " input line(s) longer than "
        << translator.max_source_tokens() << " tokens (model.max_positions - 1) were truncated\n";
  if (!o.quiet) {
    const double secs = std::chrono::duration<double>(t2 - t1).count();
    const double load = std::chrono::duration<double>(t1 - t0).count();
    const double rate = secs > 0 ? 1.0 / secs : 0.0;
    err << "moe-translate: " << stats.lines << " lines (" << stats.empty_lines << " empty), " << stats.src_words
        << " source words, " << stats.src_tokens << " source tokens, " << stats.tgt_tokens << " target tokens in "
        << secs << " s on " << device << " (" << models.compute_type(enum_name(o.decoding.dtype)) << ", beam "
        << o.decoding.search.beam << "): " << static_cast<int64_t>(stats.src_words * rate) << " words/s, "
        << static_cast<int64_t>(stats.tgt_tokens * rate) << " tokens/s; loading took " << load << " s\n";
    if (shortlist)
      err << "moe-translate: shortlist: " << shortlist->lists() << " batch lists of " << shortlist->mean_width()
          << " target ids on average (of " << tgt_vocab.size() << ")\n";
    const AllocatorStats mem = allocator_for(device).stats();
    err << "moe-translate: memory: peak " << format_bytes(mem.peak_in_use) << " in tensors, "
        << format_bytes(mem.reserved) << " reserved in " << mem.raw_allocations << " allocations\n";
  }
}

void add_translate_options(CLI::App& app, TranslateCliOptions& o) {
  cli::add_ensemble_options(app, o.models, o.weights, o.lm, " of a translation model");
  app.add_option("-i,--input", o.input, "raw source text, one sentence per line ('-' = stdin)");
  app.add_option("-o,--output", o.output, "detokenised translations, one line per input line ('-' = stdout)");
  app.add_option(
      "--prefix", o.prefix,
      "target prefixes, one per input line (tokenized like the target; empty = none): each output "
      "begins with its prefix, the search continues after it; an empty input line stays an empty output line");
  cli::add_shortlist_option(app, o.shortlist);
  cli::add_alignment_option(app, o.alignment,
                            "write each output's word alignment after it, 'text ||| 0-0 1-2 ...' (with --n-best > 1 "
                            "a fourth field)");
  app.add_flag("--word-scores", o.word_scores,
               "write each output token's log-probability after it (natural log, as the search scored it, --unkpen "
               "included; the last is </s>'s; they sum to the hypothesis's log-prob), 'text ||| -0.1234 -0.0567 ...' "
               "(after the alignment when both; with --n-best > 1 a further tab-separated field; Marian's "
               "--word-scores, fairseq's positional scores)");
  cli::add_decoding_options(app, o.decoding);
  app.get_option("--n-best")
      ->description("hypotheses per input (at most --beam); > 1 writes 'index<TAB>score<TAB>text' lines");
  app.add_option("--chunk-lines", o.chunk_lines, "input lines sorted and translated together")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cli::add_mae_inference_option(app, o.mae_inference);
  cli::add_enum_option(app, "--quantize", o.quantize,
                       "int8: dense and expert weights int8 per output channel, activations per row, on the CPU");
  cli::add_cpu_threads_option(app);
  cli::add_progress_options(app, o.quiet, o.log_every);
}

int translate_main(int argc, char** argv) {
  TranslateCliOptions o;
  CLI::App app("moe-translate: translate raw text with a trained checkpoint (beam search or sampling)",
               "moe-translate");
  add_translate_options(app, o);
  CLI11_PARSE(app, argc, argv);
  install_stop_handlers("moe-translate");
  try {
    run_translate(o, std::cin, std::cout, std::cerr);
  } catch (const Interrupted& e) {
    std::cerr << e.what() << "\n";
    return kExitStopped;
  } catch (const OutOfMemory& e) {
    std::cerr << "moe-translate: error: " << e.what() << "; lower --max-tokens (now "
              << translation_batch_tokens(o.decoding) << ") or --beam (now " << o.decoding.search.beam << ")\n";
    return 1;
  } catch (const Error& e) {
    std::cerr << "moe-translate: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace moe
