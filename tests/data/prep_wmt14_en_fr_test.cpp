// data-prep/wmt14-en-fr.sh --from a small synthetic fixture written here and laid out as the official
// statmt.org files (there is no French in ../shared/data): the seven archives with their inner paths
// (Europarl, Common Crawl with another language pair beside it, UN, News Commentary, giga-fren's
// gzipped text inside a plain tar, dev.tgz's newstest2012/2013, test-full.tgz's SGML). Checks the
// layout: training pairs from all five corpora in order with a too-long and a badly proportioned pair
// cleaned out and CR line ends stripped, valid = newstest2012 then 2013, the test set from the SGML
// segments with XML entities undone, a shared SentencePiece vocabulary; and a missing archive named.
// Needs build/bin/moe-vocab (skipped with a warning when it is not built).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "data/corpus.h"
#include "data/vocab.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;
namespace fs = std::filesystem;

namespace {
/// `n` lines "<tag> <words>" in a synthetic language (lang "en" or "fr"), line i differing from line i + 1.
std::string lines(const std::string& lang, const std::string& tag, int n, const std::string& end = "\n") {
  static const char* en[] = {"the", "house", "is", "red", "a", "cat", "sleeps", "on", "blue", "chair"};
  static const char* fr[] = {"la", "maison", "est", "rouge", "un", "chat", "dort", "sur", "bleue", "chaise"};
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += tag + std::to_string(i);
    for (int w = 0; w < 3 + i % 5; ++w) out += std::string(" ") + (lang == "en" ? en : fr)[(i * 3 + w) % 10];
    out += end;
  }
  return out;
}

void run(const std::string& cmd) { REQUIRE(std::system(cmd.c_str()) == 0); }

/// Writes the pair `stem`.{en,fr} under dir/inner (gzipped when gz) with `n` lines each.
void pair_files(const std::string& dir, const std::string& stem, const std::string& tag, int n, bool gz = false) {
  fs::create_directories(fs::path(dir + "/" + stem).parent_path());
  for (const char* lang : {"en", "fr"}) {
    const std::string text = lines(lang, tag, n);
    if (gz)
      test::write_gz(dir + "/" + stem + "." + lang + ".gz", text);
    else
      test::write_file(dir + "/" + stem + "." + lang, text);
  }
}

std::string sgm(const std::string& lang, const std::string& text) {
  std::string out =
      "<srcset setid=\"newstest2014\" srclang=\"any\">\n<doc sysid=\"ref\" docid=\"1\" genre=\"news\" "
      "origlang=\"en\">\n";
  int id = 1;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    out += "<seg id=\"" + std::to_string(id++) + "\">" + text.substr(at, nl - at) + " &amp; &quot;" + lang +
           "&quot;</seg>\n";
    at = nl + 1;
  }
  return out + "</doc>\n</srcset>\n";
}

/// The seven official files in `from`, each corpus with `n` pairs (Europarl with two to be cleaned out).
void write_fixture(const std::string& from, int n) {
  const std::string src = from + "/src";
  auto pack = [&](const std::string& archive, const std::string& dir, const std::string& flags) {
    run("tar -C " + src + "/" + dir + " " + flags + " -f " + from + "/" + archive + " .");
  };
  pair_files(src + "/europarl", "training/europarl-v7.fr-en", "ep", n);
  // One pair of 300 words and one of 2 vs 9 words (ratio 4.5), both dropped by the cleaning.
  const std::string long_line = [] {
    std::string s;
    for (int i = 0; i < 300; ++i) s += "w ";
    return s + "w";
  }();
  test::write_file(src + "/europarl/training/europarl-v7.fr-en.en", lines("en", "ep", n) + long_line + "\ntwo words\n");
  test::write_file(src + "/europarl/training/europarl-v7.fr-en.fr",
                   lines("fr", "ep", n) + long_line + "\nun deux trois quatre cinq six sept huit neuf\n");
  pack("training-parallel-europarl-v7.tgz", "europarl", "-cz");
  pair_files(src + "/commoncrawl", "commoncrawl.fr-en", "cc", n);
  test::write_file(src + "/commoncrawl/commoncrawl.de-en.en", "not this corpus\n");
  pack("training-parallel-commoncrawl.tgz", "commoncrawl", "-cz");
  pair_files(src + "/un", "un/undoc.2000.fr-en", "un", n);
  pack("training-parallel-un.tgz", "un", "-cz");
  pair_files(src + "/nc", "training/news-commentary-v9.fr-en", "nc", n);
  test::write_file(src + "/nc/training/news-commentary-v9.fr-en.en", lines("en", "nc", n, "\r\n"));  // CR line ends
  pack("training-parallel-nc-v9.tgz", "nc", "-cz");
  pair_files(src + "/giga", "giga-fren.release2.fixed", "gf", n, true);
  pack("training-giga-fren.tar", "giga", "-c");
  fs::create_directories(src + "/dev/dev");
  for (const char* lang : {"en", "fr"}) {
    test::write_file(src + "/dev/dev/newstest2012." + std::string(lang), lines(lang, "nt12_", 7));
    test::write_file(src + "/dev/dev/newstest2013." + std::string(lang), lines(lang, "nt13_", 5));
  }
  pack("dev.tgz", "dev", "-cz");
  fs::create_directories(src + "/test/test-full");
  test::write_file(src + "/test/test-full/newstest2014-fren-src.en.sgm", sgm("en", lines("en", "nt14_", 6)));
  test::write_file(src + "/test/test-full/newstest2014-fren-ref.fr.sgm", sgm("fr", lines("fr", "nt14_", 6)));
  pack("test-full.tgz", "test", "-cz");
  fs::remove_all(src);
}
}  // namespace

TEST_CASE("data-prep: wmt14-en-fr.sh --from a fixture laid out as the official files", "[data][prep]") {
  const std::string vocab_bin = std::string(MOE_BIN_DIR) + "/moe-vocab";
  if (!fs::exists(vocab_bin)) {
    WARN("no moe-vocab binary: skipped");
    return;
  }
  const std::string script = std::string(MOE_SOURCE_DIR) + "/data-prep/wmt14-en-fr.sh";
  CHECK(std::system((script + " --help > /dev/null").c_str()) == 0);
  const std::string dir = test::temp_dir("prep_enfr"), from = dir + "/from", out = dir + "/out";
  fs::create_directories(from);
  const int n = 30;
  write_fixture(from, n);
  run(script + " --from " + from + " --out " + out + " --vocab-size 100 --moe-vocab " + vocab_bin + " > " + dir +
      "/log.txt 2>&1");
  const auto train = read_parallel(out + "/train.src", out + "/train.tgt");
  REQUIRE(train.src.size() == static_cast<size_t>(5 * n));
  // Corpus order: Europarl, Common Crawl, UN, News Commentary, giga-fren; CRs gone.
  CHECK(train.src[0] == "ep0 the house is");
  CHECK(train.tgt[n] == "cc0 la maison est");
  CHECK(train.src[3 * n + 1] == "nc1 red a cat sleeps");
  CHECK(train.src[4 * n].rfind("gf0 ", 0) == 0);
  CHECK(train.tgt.back().rfind("gf" + std::to_string(n - 1) + " ", 0) == 0);
  const auto valid = read_parallel(out + "/valid.src", out + "/valid.tgt");
  REQUIRE(valid.src.size() == 12);
  CHECK(valid.src[0].rfind("nt12_0 ", 0) == 0);
  CHECK(valid.tgt[7].rfind("nt13_0 ", 0) == 0);
  const auto test = read_parallel(out + "/test.src", out + "/test.tgt");
  REQUIRE(test.src.size() == 6);
  CHECK(test.src[0] == "nt14_0 the house is & \"en\"");
  CHECK(test.tgt[5] == "nt14_5 chat dort sur & \"fr\"");
  SentencePieceVocab v(out + "/vocab.spm");
  CHECK((v.pad_id() == 0 && v.bos_id() == 2 && v.eos_id() == 3));
  CHECK(v.decode(v.encode("la maison est rouge")) == "la maison est rouge");
  // A missing archive is named.
  fs::remove(from + "/training-parallel-un.tgz");
  CHECK(std::system(
            (script + " --from " + from + " --out " + dir + "/x --moe-vocab " + vocab_bin + " 2> " + dir + "/err.txt")
                .c_str()) != 0);
  CHECK(read_lines(dir + "/err.txt").back().find("training-parallel-un.tgz") != std::string::npos);
  fs::remove_all(dir);
}
