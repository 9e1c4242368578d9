// generate_cli.h implementation: option parsing (CLI11), checkpoint loading, chunked streaming generation and
// the summary. Covered by tests/translator/generate_cli_test.cpp.
#include "moe-generate/generate_cli.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "cli/decoding_options.h"
#include "cli/program.h"
#include "cli/text_streams.h"
#include "common/progress_meter.h"
#include "common/stop_signal.h"
#include "models/checkpoint.h"
#include "translator/input_lines.h"
#include "translator/lm_generation.h"
#include "translator/translate_text.h"

namespace moe {

void run_generate(const GenerateCliOptions& o, std::istream& in, std::ostream& out, std::ostream& err) {
  MOE_CHECK(o.chunk_lines >= 1, "--chunk-lines must be positive, got ", o.chunk_lines);
  check_decoding_options(o.decoding, cli::flag_naming());
  const Device device = decoding_placement(o.decoding, cli::flag_naming()).device;
  TranslatorOptions to = translator_options(o.decoding);
  const LoadedCheckpoint ck = load_checkpoint(o.model, device);
  MOE_CHECK(ck.model->is_language_model() && ck.model->decoder(), "'", o.model, "' holds a ", ck.model->type(),
            " model, not a causal language model (moe-translate translates with translation models)");
  const data::Vocab& vocab = ck.first_vocab({"lm", "tgt", "src"});
  to.search.unk_id = vocab.unk_id();

  cli::TextStreams streams(o.input, o.output, in, out);
  std::istream* is = &streams.in();
  std::ostream* os = &streams.out();
  const auto t0 = std::chrono::steady_clock::now();
  ProgressMeter progress(err, {.name = "moe-generate",
                               .unit = "lines",
                               .total = -1,
                               .log_every = o.quiet ? 0 : o.log_every,
                               .terminal = !o.quiet && stderr_is_terminal()});
  int64_t lines = 0, done = 0, tokens = 0;
  const auto stop_point = [&] {
    throw_if_stopped("moe-generate", detail::concat(": the continuations of the first ", lines,
                                                    " prompt(s) are written, each complete; the rest is not generated "
                                                    "(continue with the input from line ",
                                                    lines + 1, ")"));
  };
  InputLines input(*is, o.input);
  std::vector<std::string> chunk;
  while (input.next_chunk(o.chunk_lines, chunk)) {
    stop_point();
    std::vector<std::vector<int32_t>> prompts;
    for (const std::string& line : chunk) prompts.push_back(vocab.encode(line));
    const auto found =
        generate_continuations(*ck.model->decoder(), *ck.params, device, to, prompts, [&](int64_t n, int64_t t) {
          progress.update(done += n, tokens += t);
          stop_point();
        });
    std::vector<std::string> text;
    for (size_t i = 0; i < found.size(); ++i)
      append_output_lines(text, found[i], o.decoding.search.n_best, lines + static_cast<int64_t>(i), vocab, false,
                          {std::nullopt, o.word_scores});
    for (const std::string& t : text) *os << t << '\n';
    os->flush();
    MOE_CHECK(os->good(), "error writing '", o.output, "'");
    lines += static_cast<int64_t>(chunk.size());
  }
  progress.finish();
  if (!input.warning().empty()) err << "moe-generate: warning: " << input.warning() << '\n';
  if (!o.quiet) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    err << "moe-generate: " << lines << " prompts, " << tokens << " tokens generated in " << secs << " s on " << device
        << " (" << (o.decoding.search.sampling ? "sampling" : "beam") << " " << o.decoding.search.beam
        << "): " << static_cast<int64_t>(secs > 0 ? static_cast<double>(tokens) / secs : 0.0) << " tokens/s\n";
  }
}

void add_generate_options(CLI::App& app, GenerateCliOptions& o) {
  app.add_option("-m,--model", o.model, "checkpoint (.safetensors) of a causal language model")->required();
  app.add_option("-i,--input", o.input,
                 "prompts, one per line ('-' = stdin; an empty line: a sentence from its start)");
  app.add_option("-o,--output", o.output, "continuations, one line per prompt ('-' = stdout)");
  cli::add_decoding_options(app, o.decoding);
  app.get_option("--n-best")
      ->description("continuations per prompt (at most --beam); > 1 writes 'index<TAB>score<TAB>text' lines");
  app.get_option("--max-len-b")->description("max new tokens = a * prompt tokens + b");
  app.get_option("--max-len-a")->description("max new tokens = a * prompt tokens + b");
  app.add_option("--chunk-lines", o.chunk_lines, "prompts read and generated together")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--word-scores", o.word_scores,
               "write each new token's log-probability after the continuation (natural log, as the search scored it; "
               "the last is </s>'s), 'text ||| -0.1234 -0.0567 ...' (with --n-best > 1 a fourth tab-separated field)");
  cli::add_cpu_threads_option(app);
  cli::add_progress_options(app, o.quiet, o.log_every);
}

int generate_main(int argc, char** argv) {
  GenerateCliOptions o;
  CLI::App app("moe-generate: continue text with a causal language model (beam search or sampling)", "moe-generate");
  add_generate_options(app, o);
  CLI11_PARSE(app, argc, argv);
  install_stop_handlers("moe-generate");
  try {
    run_generate(o, std::cin, std::cout, std::cerr);
  } catch (const Interrupted& e) {
    std::cerr << e.what() << "\n";
    return kExitStopped;
  } catch (const Error& e) {
    std::cerr << "moe-generate: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace moe
