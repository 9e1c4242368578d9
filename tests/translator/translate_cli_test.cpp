// moe-translate end to end on a saved tiny checkpoint: one output line per input line in input order
// (empty lines stay empty, over-long lines are truncated with a warning, lines that are not UTF-8 are
// translated with U+FFFD for their bad bytes and named in a warning), the same translations as
// the library, n-best blocks, files vs streams, the summary, and option errors; --shortlist (its values, the file's
// errors, outputs within the list); --alignment (its values, Marian's line format, n-best's fourth field);
// --word-scores (the search's token log-probs, after the alignment, greedy and beam); the built binary (when
// present) with --help and a pipe.
#include "moe-translate/translate_cli.h"

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <cstdio>
#include <limits>
#include <sstream>

#include "tiny_model.h"
#include "translator/translate_text.h"

using namespace moe;

namespace {
using test::split_lines;

/// moe-translate options for a saved tiny model on the CPU: at most 6 output tokens, 12-token batches.
TranslateCliOptions tiny_cli(const test::TinyModel& m, const std::filesystem::path& dir) {
  TranslateCliOptions o;
  o.models = {test::save_tiny(m, dir)};
  o.decoding.device = Device::cpu();
  o.decoding.search.max_len_b = 6;
  o.decoding.max_tokens = 12;
  return o;
}
}  // namespace

TEST_CASE("moe-translate keeps lines, order and empties", "[translator][cli]") {
  auto m = test::tiny_model(13, 10);
  const auto dir = test::temp_dir("cli");
  TranslateCliOptions o = tiny_cli(m, dir);
  o.decoding.search.beam = 3;
  o.chunk_lines = 4;  // several chunks
  std::string input;
  std::vector<std::string> lines;
  for (int i = 0; i < 11; ++i) {
    std::string l;
    if (i % 4 != 1)
      for (int w = 0; w <= (i * 7) % 13; ++w) l += (w ? " w" : "w") + std::to_string((i + w) % 20);
    lines.push_back(l);
    input += l + "\n";
  }
  input.pop_back();  // no final newline: the last line still counts
  std::istringstream in(input);
  std::ostringstream out, err;
  run_translate(o, in, out, err);
  const auto got = split_lines(out.str());
  REQUIRE(got.size() == lines.size());
  // The library gives the same lines.
  TranslatorOptions to;
  to.search.beam = 3;
  to.search.max_len_b = 6;
  Translator tr(m.net(), *m.params, Device::cpu(), to);
  TranslateStats st;
  CHECK(got == translate_lines(tr, *m.vocab, *m.vocab, lines, 1, 0, st));
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].empty()) CHECK(got[i].empty());
  CHECK(st.truncated > 0);
  CHECK(err.str().find("warning: " + std::to_string(st.truncated) + " input line(s) longer than 9 tokens") !=
        std::string::npos);
  CHECK(err.str().find("11 lines (3 empty)") != std::string::npos);
  CHECK(err.str().find("words/s") != std::string::npos);
  CHECK(err.str().find("tokens/s") != std::string::npos);

  // n-best: n lines per input, through files.
  test::write_file(dir / "in.txt", input);
  o.input = (dir / "in.txt").string();
  o.output = (dir / "out.txt").string();
  o.decoding.search.n_best = 3;
  o.quiet = true;
  std::istringstream unused;
  std::ostringstream none, err2;
  run_translate(o, unused, none, err2);
  CHECK(none.str().empty());
  const auto nb = split_lines(test::read_file(o.output));
  REQUIRE(nb.size() == 3 * lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    CHECK(nb[3 * i].rfind(std::to_string(i) + "\t", 0) == 0);
    CHECK(nb[3 * i].substr(nb[3 * i].rfind('\t') + 1) == got[i]);
  }
  CHECK(err2.str().find("lines (") == std::string::npos);  // --quiet
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-translate reports progress on stderr, never on stdout", "[translator][cli][progress]") {
  auto m = test::tiny_model(13, 10);
  const auto dir = test::temp_dir("cli-progress");
  TranslateCliOptions o = tiny_cli(m, dir);  // 12-token batches: several of them
  std::string input;
  for (int i = 0; i < 9; ++i) input += "w" + std::to_string(i) + " w" + std::to_string(i + 1) + "\n";
  test::write_file(dir / "in.txt", input);
  o.input = (dir / "in.txt").string();  // a file: the total is known
  std::istringstream unused;
  std::ostringstream quiet_out, quiet_err, out, err;
  o.log_every = 0;
  run_translate(o, unused, quiet_out, quiet_err);
  CHECK(quiet_err.str().find("/9 lines") == std::string::npos);
  o.log_every = 1e-9;  // a line after every batch (stderr here is not a terminal)
  run_translate(o, unused, out, err);
  CHECK(out.str() == quiet_out.str());  // stdout byte for byte as without progress
  CHECK(err.str().find("moe-translate: ") != std::string::npos);
  CHECK(err.str().find("/9 lines (") != std::string::npos);
  CHECK(err.str().find("9/9 lines (100.0%)") != std::string::npos);
  CHECK(err.str().find("elapsed") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-translate translates lines that are not UTF-8 and names them", "[translator][cli]") {
  auto m = test::tiny_model();
  const auto dir = test::temp_dir("cli-utf8");
  TranslateCliOptions o;
  o.models = {test::save_tiny(m, dir)};
  o.decoding.device = Device::cpu();
  o.decoding.search.max_len_b = 5;
  o.chunk_lines = 2;  // line numbers run on across chunks
  std::istringstream in("w1 w2\n\xFF w3\nw4\n\xC0\xAF w5\n");
  std::ostringstream out, err;
  run_translate(o, in, out, err);
  const auto got = split_lines(out.str());
  REQUIRE(got.size() == 4);
  TranslatorOptions tro;
  tro.search.max_len_b = 5;
  Translator tr(m.net(), *m.params, Device::cpu(), tro);
  TranslateStats st;
  CHECK(got == translate_lines(tr, *m.vocab, *m.vocab, {"w1 w2", "\uFFFD w3", "w4", "\uFFFD\uFFFD w5"}, 1, 0, st));
  CHECK(err.str().find("warning: 2 input line(s) of '-' were not valid UTF-8 (line 2 4)") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-translate option errors", "[translator][cli]") {
  auto m = test::tiny_model();
  const auto dir = test::temp_dir("cli-errors");
  TranslateCliOptions o;
  o.models = {test::save_tiny(m, dir)};
  o.decoding.device = Device::cpu();
  std::istringstream in("w1\n");
  std::ostringstream out, err;
  o.decoding.dtype = ComputeDType::bf16;
  CHECK_THROWS_WITH(run_translate(o, in, out, err), Catch::Contains("--dtype bf16 needs a GPU"));
  o.decoding.dtype = ComputeDType::f32;
  o.decoding.search.n_best = 6;
  CHECK_THROWS_WITH(run_translate(o, in, out, err), Catch::Contains("--n-best 6") && Catch::Contains("--beam = 5"));
  o.decoding.search.n_best = 1;
  o.input = (dir / "missing.txt").string();
  CHECK_THROWS_WITH(run_translate(o, in, out, err),
                    Catch::Contains("cannot open input") && Catch::Contains("missing.txt"));
  o.models = {(dir / "nope.safetensors").string()};
  CHECK_THROWS_WITH(run_translate(o, in, out, err), Catch::Contains("nope.safetensors"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-translate --shortlist", "[translator][cli][shortlist]") {
  auto m = test::tiny_model(13, 32, 4.f);
  const auto dir = test::temp_dir("cli-shortlist");
  TranslateCliOptions o = tiny_cli(m, dir);
  o.decoding.search.beam = 3;
  o.decoding.search.unkpen = std::numeric_limits<double>::infinity();
  // Each word's one translation is itself; the first 4 ids are the specials: outputs hold source words only.
  std::string lex = "w0 w0 0.9\nzz w1 0.5\n";  // zz: not in the vocabulary, skipped
  for (int i = 1; i < 20; ++i) lex += "w" + std::to_string(i) + " w" + std::to_string(i) + " 0.9\n";
  test::write_file(dir / "lex.s2t", lex);
  CLI::App app;
  add_translate_options(app, o);
  const std::string lex_path = (dir / "lex.s2t").string();
  const std::vector<std::string> args = {"--shortlist", lex_path, "4", "1", "0.5", "-m", o.models[0]};
  std::vector<const char*> argv = {"moe-translate"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  REQUIRE(o.shortlist);
  CHECK(o.shortlist->path == lex_path);
  CHECK((o.shortlist->options.first == 4 && o.shortlist->options.best == 1 && o.shortlist->options.threshold == 0.5));
  std::istringstream in("w1 w2\n\nw3 w3 w7\n");
  std::ostringstream out, err;
  run_translate(o, in, out, err);
  const auto lines = split_lines(out.str());
  REQUIRE(lines.size() == 3);
  CHECK(lines[1].empty());
  std::istringstream words(lines[0] + " " + lines[2]);
  for (std::string word; words >> word;) CHECK((word == "w1" || word == "w2" || word == "w3" || word == "w7"));
  CHECK_THAT(err.str(), Catch::Contains("20 pairs (1 skipped") && Catch::Contains("batch lists of"));

  CHECK_THROWS_WITH(cli::parse_shortlist_spec({}), Catch::Contains("FILE [FIRST"));
  CHECK_THROWS_WITH(cli::parse_shortlist_spec({"f", "100", "x"}), Catch::Contains("BEST") && Catch::Contains("'x'"));
  CHECK_THROWS_WITH(cli::parse_shortlist_spec({"f", "-1"}), Catch::Contains("FIRST"));
  CHECK_THROWS_WITH(cli::parse_shortlist_spec({"f", "1", "1", "2"}), Catch::Contains("THRESHOLD must be at most 1"));
  CHECK_THROWS_WITH(cli::parse_shortlist_spec({"f", "1", "1", "0", "9"}), Catch::Contains("got 5 values"));
  o.shortlist->path = (dir / "missing.s2t").string();
  CHECK_THROWS_WITH(run_translate(o, in, out, err), Catch::Contains("missing.s2t"));
  test::write_file(dir / "bad.s2t", "w1 w1 0.5\nw2 w2\n");
  o.shortlist->path = (dir / "bad.s2t").string();
  CHECK_THROWS_WITH(run_translate(o, in, out, err), Catch::Contains("bad.s2t:2"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-translate --alignment", "[translator][cli][alignment]") {
  auto m = test::tiny_model(13, 32, 3.f);
  const auto dir = test::temp_dir("cli-alignment");
  TranslateCliOptions o = tiny_cli(m, dir);
  o.decoding.search.beam = 3;
  CLI::App app;
  add_translate_options(app, o);
  std::vector<const char*> argv = {"moe-translate", "--alignment", "0.3", "-m", o.models[0].c_str()};
  app.parse(static_cast<int>(argv.size()), argv.data());
  REQUIRE(o.alignment == AlignmentOutput{AlignmentKind::threshold, 0.3f});
  const char* bad[] = {"moe-translate", "--alignment", "strong", "-m", o.models[0].c_str()};
  CHECK_THROWS_WITH(app.parse(5, bad), Catch::Contains("hard, soft or a threshold") && Catch::Contains("'strong'"));

  // The library's translations and alignments, each line "text ||| pairs"; an empty input has an empty alignment.
  const std::vector<std::string> lines = {"w1 w2 w3", "", "w4 w5 w6 w7 w8"};
  TranslatorOptions to;
  to.search.beam = 3;
  to.search.max_len_b = 6;
  to.search.n_best = 2;
  to.alignment = true;
  const Translator tr(m.net(), *m.params, Device::cpu(), to);
  TranslateStats st;
  const auto results = tr.translate({m.vocab->encode(lines[0]), {}, m.vocab->encode(lines[2])});
  for (const AlignmentOutput& format : {AlignmentOutput{}, AlignmentOutput{AlignmentKind::soft, 0}}) {
    o.alignment = format;
    o.decoding.search.n_best = 1;
    std::istringstream in(lines[0] + "\n\n" + lines[2] + "\n");
    std::ostringstream out, err;
    run_translate(o, in, out, err);
    const auto got = split_lines(out.str());
    REQUIRE(got.size() == 3);
    CHECK(got[1] == " ||| ");
    for (size_t i : {size_t{0}, size_t{2}}) {
      const Hypothesis& best = results[i][0];
      const size_t bar = got[i].find(" ||| ");
      CHECK(got[i].substr(0, bar) == hypothesis_text(*m.vocab, best));
      const std::string written = got[i].substr(bar + 5);
      if (format.kind == AlignmentKind::hard) {  // one pair per target position, the last the </s>s'
        CHECK(written == format_alignment(best.alignment, format));
        CHECK(std::count(written.begin(), written.end(), '-') == static_cast<long>(best.tokens.size() + 1));
      } else {  // the weights, up to the last bit a batch of other sentences can change
        std::istringstream weights(written);
        std::string row;
        for (const std::vector<float>& want : best.alignment) {
          REQUIRE(weights >> row);
          std::istringstream values(row);
          std::string v;
          for (float w : want) {
            REQUIRE(std::getline(values, v, ','));
            CHECK(std::stof(v) == Approx(w).margin(1e-5));
          }
        }
        CHECK_FALSE(weights >> row);
      }
    }
  }
  // n-best: the alignment is a fourth field
  o.alignment = AlignmentOutput{};
  o.decoding.search.n_best = 2;
  std::istringstream in(lines[0] + "\n");
  std::ostringstream out, err;
  run_translate(o, in, out, err);
  const auto got = split_lines(out.str());
  REQUIRE(got.size() == 2);
  for (size_t h = 0; h < 2; ++h)
    CHECK(got[h].substr(got[h].rfind('\t') + 1) == format_alignment(results[0][h].alignment, AlignmentOutput{}));

  // --alignment-words: links between words (a word list's tokens are words: the token links without </s>'s)
  CLI::App words_app;
  TranslateCliOptions w = o;
  add_translate_options(words_app, w);
  const char* words_argv[] = {"moe-translate", "--alignment-words", "--alignment", "hard", "-m", o.models[0].c_str()};
  words_app.parse(6, words_argv);  // after --alignment whatever the order
  REQUIRE(w.alignment);
  CHECK(w.alignment->words);
  CLI::App alone_app, soft_app;
  TranslateCliOptions alone = o, soft = o;
  add_translate_options(alone_app, alone);
  add_translate_options(soft_app, soft);
  const char* alone_argv[] = {"moe-translate", "--alignment-words", "-m", o.models[0].c_str()};
  CHECK_THROWS_WITH(alone_app.parse(4, alone_argv), Catch::Contains("--alignment-words requires --alignment"));
  const char* soft_argv[] = {"moe-translate", "--alignment", "soft", "--alignment-words", "-m", o.models[0].c_str()};
  CHECK_THROWS_WITH(soft_app.parse(6, soft_argv), Catch::Contains("not soft"));
  w.decoding.search.n_best = 1;
  std::istringstream win(lines[0] + "\n");
  std::ostringstream wout, werr;
  run_translate(w, win, wout, werr);
  const std::string line = split_lines(wout.str()).at(0), written = line.substr(line.find(" ||| ") + 5);
  std::vector<data::WordLink> want;
  for (const data::WordLink& l : alignment_links(results[0][0].alignment, AlignmentOutput{}))
    if (l.source < 3 && l.target < static_cast<int32_t>(results[0][0].tokens.size())) want.push_back(l);
  std::sort(want.begin(), want.end(), [](const data::WordLink& a, const data::WordLink& b) {
    return a.target != b.target ? a.target < b.target : a.source < b.source;
  });
  CHECK(written == data::format_word_links(want));
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-translate --word-scores", "[translator][cli]") {
  auto m = test::tiny_model(13, 32, 3.f);
  const auto dir = test::temp_dir("cli-word-scores");
  TranslateCliOptions o = tiny_cli(m, dir);
  CLI::App app;
  add_translate_options(app, o);
  std::vector<const char*> argv = {"moe-translate", "--word-scores", "--beam", "1", "-m", o.models[0].c_str()};
  app.parse(static_cast<int>(argv.size()), argv.data());
  REQUIRE(o.word_scores);
  const std::vector<std::string> lines = {"w1 w2 w3", "", "w4 w5 w6 w7 w8"};
  const std::string input = lines[0] + "\n\n" + lines[2] + "\n";
  const auto run = [&](const TranslateCliOptions& opts) {
    std::istringstream in(input);
    std::ostringstream out, err;
    run_translate(opts, in, out, err);
    return split_lines(out.str());
  };
  // Greedy (whose 1-best path skips the log-softmax without word scores) and beam 3: the search's scores.
  for (int beam : {1, 3}) {
    INFO("beam " << beam);
    o.decoding.search.beam = beam;
    TranslatorOptions to;
    static_cast<SearchOptions&>(to.search) = o.decoding.search;
    to.search.n_best = beam;
    to.alignment = true;
    const Translator tr(m.net(), *m.params, Device::cpu(), to);
    const auto results = tr.translate({m.vocab->encode(lines[0]), {}, m.vocab->encode(lines[2])});
    o.alignment.reset();
    const auto got = run(o);
    REQUIRE(got.size() == 3);
    CHECK(got[1] == " ||| ");
    for (size_t i : {size_t{0}, size_t{2}}) {
      const Hypothesis& best = results[i][0];
      REQUIRE(best.token_scores.size() == best.tokens.size() + 1);
      CHECK(got[i] == hypothesis_text(*m.vocab, best) + " ||| " + format_word_scores(best.token_scores));
      double sum = 0;
      for (float x : best.token_scores) sum += x;
      CHECK(sum == Approx(best.log_prob).margin(1e-4));
    }
    // After the alignment when both; with n-best a further tab-separated field.
    o.alignment = AlignmentOutput{};
    const auto both = run(o);
    CHECK(both[0] == hypothesis_text(*m.vocab, results[0][0]) + " ||| " +
                         format_alignment(results[0][0].alignment, AlignmentOutput{}) + " ||| " +
                         format_word_scores(results[0][0].token_scores));
    if (beam == 1) continue;
    o.decoding.search.n_best = 2;
    const auto nbest = run(o);
    o.decoding.search.n_best = 1;
    REQUIRE(nbest.size() == 6);
    for (size_t h = 0; h < 2; ++h)
      CHECK(nbest[h].substr(nbest[h].rfind('\t') + 1) == format_word_scores(results[0][h].token_scores));
    CHECK(nbest[2] == "1\t0.000000\t\t\t");  // the empty input: empty text, alignment and word scores
  }
  CHECK(format_word_scores({-0.123456f, -2.5f}) == "-0.1235 -2.5000");
  std::filesystem::remove_all(dir);
}

TEST_CASE("the moe-translate binary", "[translator][cli]") {
  const std::string bin = std::string(MOE_BIN_DIR) + "/moe-translate";
  if (!std::filesystem::exists(bin)) {
    WARN("moe-translate not built at " << bin << ": skipping the binary checks");
    return;
  }
  auto m = test::tiny_model();
  const auto dir = test::temp_dir("bin");
  const std::string ckpt = test::save_tiny(m, dir);
  test::write_file(dir / "in.txt", "w1 w2\n\nw3\n");
  const std::string cmd = bin + " -m " + ckpt + " --device cpu --beam 2 --max-len-b 5 < " + (dir / "in.txt").string() +
                          " > " + (dir / "out.txt").string() + " 2> " + (dir / "err.txt").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto out = split_lines(test::read_file(dir / "out.txt"));
  REQUIRE(out.size() == 3);
  CHECK(out[1].empty());
  CHECK(std::system((bin + " --help > " + (dir / "help.txt").string()).c_str()) == 0);
  const std::string help = test::read_file(dir / "help.txt");
  for (const char* opt :
       {"--beam", "--n-best", "--lenpen", "--max-len-a", "--max-len-b", "--device", "--dtype", "--max-tokens",
        "--mae-inference", "--prefix", "--weights", "--sampling", "--shortlist", "--alignment"})
    CHECK(help.find(opt) != std::string::npos);
  CHECK(std::system((bin + " --device cpu 2> /dev/null").c_str()) != 0);  // -m is required
  std::filesystem::remove_all(dir);
}
