// moe-vocab: builds SentencePiece (BPE/unigram) or word vocabularies, and benchmarks the data path
// (--bench: batches/s and tokens/s of the batch generator with its prefetch thread), and writes the
// token ids of a text file (--encode: one line of space-separated ids per input line, for the PyTorch
// side of scripts/bench-cpu.sh).
// Logic lives in lib/data/vocab_builder.cpp and lib/data/bench.cpp; this is the option parsing.
// Covered by tests/data/vocab_test.cpp and data-prep/multi30k.sh.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <fstream>

#include "common/cpu_threads.h"
#include "common/error.h"
#include "data/bench.h"
#include "data/corpus.h"
#include "data/vocab.h"
#include "data/vocab_builder.h"

int main(int argc, char** argv) {
  moe::rerun_with_openmp_spin(argv);  // libgomp idle threads: short spinning (common/cpu_threads.h)
  if (!moe::apply_cpu_threads_flag(argc, argv)) return 2;  // --cpu-threads N (common/cpu_threads.h)
  CLI::App app{"moe-vocab: build SentencePiece or word vocabularies (ids: <pad>=0 <unk>=1 <s>=2 </s>=3)"};
  std::vector<std::string> inputs;
  std::string output, type = "bpe", normalization = "nmt_nfkc", vocab_path, bench_tgt;
  int vocab_size = 8000, threads = 2;
  int64_t min_count = 1, max_size = 0, max_tokens = 4096, input_sentence_size = 10'000'000;
  double coverage = 1.0, seconds = 5.0;
  bool bench = false, encode = false;
  app.add_option("-i,--input", inputs, "training text files (plain or .gz); several for a joint vocabulary");
  app.add_option("-o,--output", output, "the vocabulary file (x.spm / x.model: SentencePiece; else words)");
  app.add_option("-t,--type", type, "bpe | unigram | word")->check(CLI::IsMember({"bpe", "unigram", "word"}));
  app.add_option("-s,--vocab-size", vocab_size, "SentencePiece vocabulary size");
  app.add_option("--normalization", normalization, "SentencePiece normalization rule (nmt_nfkc, identity, ...)");
  app.add_option("--character-coverage", coverage, "SentencePiece character coverage");
  app.add_option("--input-sentence-size", input_sentence_size, "sentences sampled for SentencePiece training");
  app.add_option("--threads", threads, "trainer threads");
  app.add_option("--min-count", min_count, "word vocabularies: minimum count (rarer words become <unk>)");
  app.add_option("--max-size", max_size, "word vocabularies: keep at most this many words (0 = all)");
  app.add_flag("--bench", bench, "benchmark the batch generator on --input (src) [--bench-tgt] with --vocab");
  app.add_flag("--encode", encode, "write the ids of --input (one file) encoded with --vocab to --output");
  app.add_option("--vocab", vocab_path, "--bench / --encode: the vocabulary to encode with");
  app.add_option("--bench-tgt", bench_tgt, "--bench: target side (default: the source again)");
  app.add_option("--max-tokens", max_tokens, "--bench: token budget per batch");
  app.add_option("--seconds", seconds, "--bench: how long to run");
  CLI11_PARSE(app, argc, argv);
  try {
    if (inputs.empty()) throw moe::Error("moe-vocab: give --input files (see --help)");
    if (encode) {
      if (vocab_path.empty() || output.empty() || inputs.size() != 1)
        throw moe::Error("moe-vocab --encode: give --vocab, one --input and --output");
      const auto vocab = moe::data::load_vocab(vocab_path);
      std::ofstream out(output);
      if (!out) throw moe::Error("moe-vocab --encode: cannot write " + output);
      for (const auto& line : moe::data::read_lines(inputs[0])) {
        const auto ids = vocab->encode(line);
        for (size_t i = 0; i < ids.size(); ++i) out << (i ? " " : "") << ids[i];
        out << '\n';
      }
      return 0;
    }
    if (bench) {
      if (vocab_path.empty()) throw moe::Error("moe-vocab --bench: give --vocab");
      const auto r = moe::data::bench_generator(inputs[0], bench_tgt.empty() ? inputs[0] : bench_tgt, vocab_path,
                                                max_tokens, seconds);
      spdlog::info("moe-vocab --bench: {}", r.summary());
      return 0;
    }
    if (output.empty()) throw moe::Error("moe-vocab: give --output (see --help)");
    if (type == "word") {
      moe::data::build_word_vocab({inputs, output, min_count, max_size});
    } else {
      moe::data::SpmTrainOptions o;
      o.inputs = inputs;
      o.output = output;
      o.vocab_size = vocab_size;
      o.model_type = type;
      o.normalization = normalization;
      o.character_coverage = coverage;
      o.input_sentence_size = input_sentence_size;
      o.threads = threads;
      moe::data::train_sentencepiece(o);
    }
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
