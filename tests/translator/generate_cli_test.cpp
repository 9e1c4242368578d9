// moe-generate end to end on a saved tiny LM checkpoint (tiny_model.h): one output line per prompt in input
// order (an empty prompt generates from <s>), the library's continuations (and word scores), n-best blocks,
// sampling reproducible from the seed, chunks, and errors (a translation checkpoint, a missing input); the built
// binary (when present) with --help and a pipe.
#include "moe-generate/generate_cli.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "tiny_model.h"
#include "translator/lm_generation.h"
#include "translator/translate_text.h"

using namespace moe;

namespace {
using test::split_lines;

std::string run(const GenerateCliOptions& o, const std::string& input) {
  std::istringstream in(input);
  std::ostringstream out, err;
  run_generate(o, in, out, err);
  return out.str();
}

GenerateCliOptions tiny_cli(const std::string& checkpoint) {
  GenerateCliOptions o;
  o.model = checkpoint;
  o.decoding.device = Device::cpu();
  o.decoding.search.max_len_b = 6;
  o.quiet = true;
  return o;
}

const std::vector<std::string> kPrompts = {"w4 w9 w13", "", "w7", "w5 w6 w7 w8", "w2 w2"};
}  // namespace

TEST_CASE("moe-generate keeps one line per prompt and gives the library's continuations", "[translator][generate]") {
  const auto m = test::tiny_lm();
  const auto dir = test::temp_dir("generate");
  GenerateCliOptions o = tiny_cli(test::save_tiny(m, dir, {"lm"}));
  o.chunk_lines = 2;  // several chunks
  std::string input;
  for (const auto& p : kPrompts) input += p + "\n";
  const auto got = split_lines(run(o, input));
  REQUIRE(got.size() == kPrompts.size());
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& p : kPrompts) prompts.push_back(m.vocab->encode(p));
  const auto want =
      generate_continuations(*m.model->decoder(), *m.params, Device::cpu(), translator_options(o.decoding), prompts);
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    INFO("prompt " << i);
    CHECK(got[i] == hypothesis_text(*m.vocab, want[i][0]));
  }
  CHECK(!got[1].empty());  // an empty prompt generates from <s>
  // --word-scores: each new token's log-prob, </s>'s last
  o.word_scores = true;
  const auto scored = split_lines(run(o, input));
  REQUIRE(scored.size() == kPrompts.size());
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    INFO("prompt " << i);
    REQUIRE(want[i][0].token_scores.size() == want[i][0].tokens.size() + 1);
    CHECK(scored[i] == got[i] + " ||| " + format_word_scores(want[i][0].token_scores));
  }
  o.word_scores = false;

  // n-best blocks of sampled continuations, the same for the same seed
  o.decoding.search.sampling = true;
  o.decoding.search.beam = o.decoding.search.n_best = 3;
  o.decoding.search.seed = 4;
  const std::string sampled = run(o, input);
  const auto lines = split_lines(sampled);
  REQUIRE(lines.size() == 3 * kPrompts.size());
  for (size_t i = 0; i < lines.size(); ++i) CHECK(lines[i].rfind(std::to_string(i / 3) + "\t", 0) == 0);
  CHECK(run(o, input) == sampled);
  o.decoding.search.seed = 5;
  CHECK(run(o, input) != sampled);
  std::filesystem::remove_all(dir);
}

TEST_CASE("moe-generate errors name the checkpoint or the input", "[translator][generate]") {
  const auto dir = test::temp_dir("generate-errors");
  const auto translation = test::tiny_model();
  GenerateCliOptions o = tiny_cli(test::save_tiny(translation, dir));
  CHECK_THROWS_WITH(run(o, "w1\n"), Catch::Contains("not a causal language model") &&
                                        Catch::Contains("tiny.safetensors") && Catch::Contains("moe-translate"));
  std::filesystem::remove_all(dir);
  const auto lm_dir = test::temp_dir("generate-errors-lm");
  o = tiny_cli(test::save_tiny(test::tiny_lm(), lm_dir, {"lm"}));
  o.input = (lm_dir / "missing.txt").string();
  CHECK_THROWS_WITH(run(o, ""), Catch::Contains("cannot open input") && Catch::Contains("missing.txt"));
  o.input = "-";
  o.decoding.search.temperature = 0.5;
  CHECK_THROWS_WITH(run(o, "w1\n"), Catch::Contains("--temperature applies to sampling only"));
  std::filesystem::remove_all(lm_dir);
}

TEST_CASE("the moe-generate binary", "[translator][generate]") {
  const std::string bin = std::string(MOE_BIN_DIR) + "/moe-generate";
  if (!std::filesystem::exists(bin)) {
    WARN("moe-generate not built at " << bin << ": skipping the binary checks");
    return;
  }
  const auto dir = test::temp_dir("generate-bin");
  const std::string ckpt = test::save_tiny(test::tiny_lm(), dir, {"lm"});
  test::write_file(dir / "in.txt", "w1 w2\n\nw3\n");
  const std::string cmd = bin + " -m " + ckpt + " --device cpu --sampling --max-len-b 5 < " +
                          (dir / "in.txt").string() + " > " + (dir / "out.txt").string() + " 2> " +
                          (dir / "err.txt").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(split_lines(test::read_file(dir / "out.txt")).size() == 3);
  CHECK(test::read_file(dir / "err.txt").find("moe-generate: 3 prompts") != std::string::npos);
  CHECK(std::system((bin + " --help > " + (dir / "help.txt").string()).c_str()) == 0);
  const std::string help = test::read_file(dir / "help.txt");
  for (const char* opt : {"--beam", "--sampling", "--sampling-topp", "--temperature", "--seed", "--max-len-b"})
    CHECK(help.find(opt) != std::string::npos);
  CHECK(std::system((bin + " --device cpu 2> /dev/null").c_str()) != 0);  // -m is required
  std::filesystem::remove_all(dir);
}
