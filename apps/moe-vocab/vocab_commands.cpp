// The subcommands of moe-vocab, one table line each (vocab_program.h): `build` (SentencePiece BPE/unigram
// or word vocabularies; lib/data/vocab_builder.h), `encode` (the token ids of a text file, one line of
// space-separated ids per input line, for the PyTorch side of scripts/bench-cpu.sh), `lex` (a lexical table of a
// parallel corpus by IBM Model 1 or fast_align's model, the input of moe-translate --shortlist, and with
// --alignments each pair's word alignment, the input of moe-train's guided alignment; lib/data/lexical_table.h) and
// `bench` (batches/s and tokens/s of the batch generator with its prefetch thread; lib/data/bench.h). Covered by
// tests/data/vocab_test.cpp, tests/data/prep_test.cpp, tests/data/bench_test.cpp, tests/data/lexical_table_test.cpp and
// tests/scripts/e2e_translation.sh (lex).
#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "data/bench.h"
#include "data/corpus.h"
#include "data/lexical_table.h"
#include "data/vocab.h"
#include "data/vocab_builder.h"
#include "moe-vocab/vocab_program.h"

namespace moe {

namespace {
cli::SubcommandRunner setup_build(CLI::App& sub) {
  struct Args {
    std::vector<std::string> inputs;
    std::string output, type = "bpe";
    data::SpmTrainOptions spm;
    data::WordVocabOptions words;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("-i,--input", a->inputs, "training text files (plain or .gz); several for a joint vocabulary")
      ->required();
  sub.add_option("-o,--output", a->output, "the vocabulary file (x.spm / x.model: SentencePiece; else words)")
      ->required();
  sub.add_option("-t,--type", a->type, "bpe | unigram | word")
      ->check(CLI::IsMember({"bpe", "unigram", "word"}))
      ->capture_default_str();
  sub.add_option("-s,--vocab-size", a->spm.vocab_size, "SentencePiece vocabulary size")->capture_default_str();
  sub.add_option("--normalization", a->spm.normalization, "SentencePiece normalization rule (nmt_nfkc, identity, ...)")
      ->capture_default_str();
  sub.add_option("--character-coverage", a->spm.character_coverage, "SentencePiece character coverage")
      ->capture_default_str();
  sub.add_option("--input-sentence-size", a->spm.input_sentence_size, "sentences sampled for SentencePiece training")
      ->capture_default_str();
  sub.add_option("--threads", a->spm.threads, "trainer threads")->capture_default_str();
  sub.add_option("--min-count", a->words.min_count, "word vocabularies: minimum count (rarer words become <unk>)")
      ->capture_default_str();
  sub.add_option("--max-size", a->words.max_size, "word vocabularies: keep at most this many words (0 = all)")
      ->capture_default_str();
  return [a](std::ostream&, std::ostream&) {
    if (a->type == "word") {
      data::build_word_vocab({a->inputs, a->output, a->words.min_count, a->words.max_size});
    } else {
      data::SpmTrainOptions o = a->spm;
      o.inputs = a->inputs;
      o.output = a->output;
      o.model_type = a->type;
      data::train_sentencepiece(o);
    }
    return 0;
  };
}

cli::SubcommandRunner setup_encode(CLI::App& sub) {
  struct Args {
    std::string input, output, vocab;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("-i,--input", a->input, "the text file (plain or .gz)")->required();
  sub.add_option("-o,--output", a->output, "the ids file: one line of space-separated ids per input line")->required();
  sub.add_option("--vocab", a->vocab, "the vocabulary to encode with")->required();
  return [a](std::ostream&, std::ostream&) {
    const auto vocab = data::load_vocab(a->vocab);
    std::ofstream out(a->output);
    MOE_CHECK(out.is_open(), "moe-vocab encode: cannot write ", a->output);
    for (const auto& line : data::read_lines(a->input)) {
      const auto ids = vocab->encode(line);
      for (size_t i = 0; i < ids.size(); ++i) out << (i ? " " : "") << ids[i];
      out << '\n';
    }
    MOE_CHECK(out.good(), "moe-vocab encode: error writing ", a->output);
    return 0;
  };
}

cli::SubcommandRunner setup_lex(CLI::App& sub) {
  struct Args {
    std::string src, tgt, src_vocab, tgt_vocab, output, alignments;
    data::Model1Options model1;
    int64_t max_lines = 0;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("-i,--input", a->src, "the source side of the parallel text (plain or .gz)")->required();
  sub.add_option("--tgt", a->tgt, "the target side, line by line with the source")->required();
  sub.add_option("--src-vocab", a->src_vocab, "the source vocabulary (the model's)")->required();
  sub.add_option("--tgt-vocab", a->tgt_vocab, "the target vocabulary (default: the source's)");
  sub.add_option("-o,--output", a->output, "the table: 'target source p(target|source)' lines (Marian's lex.s2t)")
      ->required();
  sub.add_option("--iterations", a->model1.iterations, "IBM Model 1 EM iterations")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub.add_option("--prune", a->model1.prune, "pairs with a lower probability are dropped after each iteration")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.999));
  sub.add_option("--max-lines", a->max_lines, "read at most this many sentence pairs (0 = all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--diagonal", a->model1.diagonal,
                 "fast_align's diagonal tension: > 0 favours links near the diagonal (IBM Model 2 with fast_align's "
                 "prior; its -d uses 4); 0 = IBM Model 1")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--alignments", a->alignments,
                 "also write each pair's word alignment, 's-t' links over the pairs' subword token positions (each "
                 "target token with its most probable source token), one line per pair: moe-train's "
                 "data.train.alignment (guided alignment; --diagonal 4 recommended)");
  return [a](std::ostream& out, std::ostream&) {
    const auto src_vocab = data::load_vocab(a->src_vocab);
    const auto tgt_vocab = a->tgt_vocab.empty() ? data::load_vocab(a->src_vocab) : data::load_vocab(a->tgt_vocab);
    data::check_aligned(a->src, a->tgt);
    std::vector<std::vector<int32_t>> sources, targets;
    data::LineReader src(a->src), tgt(a->tgt);
    for (std::string s, t; (a->max_lines == 0 || src.line_number() < a->max_lines) && src.next(s) && tgt.next(t);) {
      sources.push_back(src_vocab->encode(s));
      targets.push_back(tgt_vocab->encode(t));
    }
    std::vector<std::vector<data::WordLink>> links;
    const data::LexicalTable table =
        data::train_lexical_table(sources, targets, a->model1, a->alignments.empty() ? nullptr : &links);
    std::ostringstream text;
    data::write_lexical_table(table, *src_vocab, *tgt_vocab, text);
    write_file_atomic(a->output, text.str());
    const char* model = a->model1.diagonal > 0 ? "fast_align's diagonal model" : "IBM Model 1";
    out << "moe-vocab lex: " << table.entries.size() << " pairs from " << sources.size() << " sentence pairs ("
        << a->model1.iterations << " iterations of " << model << ") -> " << a->output << "\n";
    if (a->alignments.empty()) return 0;
    std::ostringstream lines;
    int64_t count = 0;
    for (const auto& pair : links) {
      lines << data::format_word_links(pair) << '\n';
      count += static_cast<int64_t>(pair.size());
    }
    write_file_atomic(a->alignments, lines.str());
    out << "moe-vocab lex: " << count << " links over " << links.size() << " sentence pairs -> " << a->alignments
        << "\n";
    return 0;
  };
}

cli::SubcommandRunner setup_bench(CLI::App& sub) {
  struct Args {
    std::string src, tgt, vocab;
    int64_t max_tokens = 4096;
    double seconds = 5.0;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("-i,--input", a->src, "the source side of the parallel text")->required();
  sub.add_option("--tgt", a->tgt, "the target side (default: the source again)");
  sub.add_option("--vocab", a->vocab, "the vocabulary to encode with")->required();
  sub.add_option("--max-tokens", a->max_tokens, "token budget per batch")->capture_default_str();
  sub.add_option("--seconds", a->seconds, "how long to run")->capture_default_str();
  return [a](std::ostream& out, std::ostream&) {
    const auto r = data::bench_generator(a->src, a->tgt.empty() ? a->src : a->tgt, a->vocab, a->max_tokens, a->seconds);
    out << "moe-vocab bench: " << r.summary() << "\n";
    return 0;
  };
}
}  // namespace

cli::SubcommandTable vocab_table() {
  return cli::SubcommandTable(
      "moe-vocab", "moe-vocab: vocabularies (ids: <pad>=0 <unk>=1 <s>=2 </s>=3), token ids and the data path's speed",
      {
          {"build", "build a SentencePiece (bpe, unigram) or word vocabulary from training text", setup_build},
          {"encode", "write the token ids of a text file, one line per input line", setup_encode},
          {"lex", "a lexical table p(target|source) of a parallel text (IBM Model 1), for moe-translate --shortlist",
           setup_lex},
          {"bench", "batches/s and tokens/s of the batch generator with its prefetch thread", setup_bench},
      });
}

}  // namespace moe
