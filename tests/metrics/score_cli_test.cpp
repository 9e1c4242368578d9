// moe-score command-line tests: bleu/chrf subcommands on temporary files (sacreBLEU's README
// example, expected 48.53), JSON output, --help, line-count mismatch errors naming both files,
// input that is not UTF-8 (an error naming the file and line, as sacreBLEU refuses it), a custom
// subcommand registered in the table, and a real-data identity check (MOE_SHARED_DATA).
#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "metrics/read_lines.h"
#include "moe-score/score_program.h"

using namespace moe;
using namespace moe::metrics;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("moe_score_test_" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

struct Result {
  int rc;
  std::string out, err;
};

Result run(std::vector<std::string> args) {
  const cli::SubcommandTable table = score_table();
  args.insert(args.begin(), "moe-score");
  std::ostringstream out, err;
  int rc = table.run(args, out, err);
  return {rc, out.str(), err.str()};
}
}  // namespace

TEST_CASE("moe-score bleu and chrf on files", "[metrics][cli]") {
  TempDir dir;
  auto hyp = dir.write("hyp", "The dog bit the man.\nIt wasn't surprising.\nThe man had just bitten him.\n");
  auto r1 = dir.write("r1", "The dog bit the man.\nIt was not unexpected.\nThe man bit him first.\n");
  auto r2 = dir.write("r2", "The dog had bit the man.\r\nNo one was surprised.\r\nThe man had bitten the dog.\r\n");
  auto short_ref = dir.write("short", "one line\n");

  Result a = run({"bleu", "-r", r1, "-r", r2, "-i", hyp});
  CHECK(a.rc == 0);
  CHECK(a.out ==
        "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)\n"
        "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.3.1\n");
  Result b = run({"bleu", "-r", r1 + "," + r2, "-i", hyp, "-b", "-w", "4"});
  CHECK(b.out == "48.5308\n");
  Result j = run({"bleu", "-r", r1, "-r", r2, "-i", hyp, "--format", "json"});
  CHECK_THAT(j.out, Catch::Contains("\"score\": 48.53") && Catch::Contains("\"counts\": [14, 7, 5, 3]") &&
                        Catch::Contains("\"totals\": [17, 14, 11, 8]") && Catch::Contains("\"sys_len\": 17") &&
                        Catch::Contains("\"ref_len\": 18") && Catch::Contains("\"bp\": ") &&
                        Catch::Contains("\"precisions\": [") && Catch::Contains("\"signature\": \"nrefs:2|"));
  Result c = run({"chrf", "-r", r1, "-i", hyp});
  CHECK(c.rc == 0);
  CHECK_THAT(c.out, Catch::StartsWith("chrF2 = ") && Catch::Contains("nc:6|nw:0"));
  Result cpp = run({"chrf", "-r", r1, "-i", hyp, "--chrf-word-order", "2"});
  CHECK_THAT(cpp.out, Catch::StartsWith("chrF2++ = "));

  // --num-refs: one file with tab-separated references gives the same as two files.
  auto tabbed = dir.write("tabbed",
                          "The dog bit the man.\tThe dog had bit the man.\nIt was not unexpected.\tNo one "
                          "was surprised.\nThe man bit him first.\tThe man had bitten the dog.\n");
  CHECK(run({"bleu", "-r", tabbed, "--num-refs", "2", "-i", hyp}).out == a.out);
  Result few = run({"bleu", "-r", r1, "--num-refs", "2", "-i", hyp});
  CHECK(few.rc == 1);
  CHECK_THAT(few.err, Catch::Contains("line 1") && Catch::Contains("expected 2"));
  // sacreBLEU's control-character test (test.sh): a carriage return inside a reference line is
  // whitespace, not a line break.
  auto buggy = dir.write("buggy", "Hello! How are you \r doing today?");
  auto okay = dir.write("okay", "Hello! How are you doing today?\n");
  auto hello = dir.write("hello", "Hello! How are you doing today?\n");
  CHECK(run({"bleu", "-r", buggy, "-i", hello, "-b"}).out == run({"bleu", "-r", okay, "-i", hello, "-b"}).out);
  CHECK(run({"bleu", "-r", buggy, "-i", hello, "-b"}).out == "100.00\n");

  Result bad = run({"bleu", "-r", short_ref, "-i", hyp});
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.err, Catch::Contains(hyp) && Catch::Contains(short_ref) && Catch::Contains("3 lines") &&
                          Catch::Contains("has 1"));
  Result missing = run({"bleu", "-r", (dir.path / "nope").string(), "-i", hyp});
  CHECK(missing.rc == 1);
  CHECK_THAT(missing.err, Catch::Contains("cannot open") && Catch::Contains("nope"));
  Result badtok = run({"bleu", "-r", r1, "-i", hyp, "-t", "klingon"});
  CHECK(badtok.rc != 0);
  auto latin1 = dir.write("latin1", "The dog bit the man.\nIt wasn't surprising.\nThe man had just bitt\xE9n him.\n");
  Result notutf8 = run({"chrf", "-r", r1, "-i", latin1});
  CHECK(notutf8.rc == 1);
  CHECK_THAT(notutf8.err, Catch::Contains(latin1) && Catch::Contains("line 3 is not valid UTF-8 (byte 22"));
}

TEST_CASE("moe-score --help and subcommand table", "[metrics][cli]") {
  Result h = run({"--help"});
  CHECK(h.rc == 0);
  CHECK_THAT(h.out, Catch::Contains("bleu") && Catch::Contains("chrf"));
  Result hb = run({"bleu", "--help"});
  CHECK(hb.rc == 0);
  CHECK_THAT(hb.out, Catch::Contains("--tokenize") && Catch::Contains("--smooth-method") &&
                         Catch::Contains("--compound-split"));
  Result none = run({});
  CHECK(none.rc != 0);

  cli::SubcommandTable table("moe-score", "test", {score_table_entry("bleu"), score_table_entry("chrf")});
  int seen = 0;
  table.add("stub", "a subcommand added by one table line", [&seen](CLI::App& sub) -> cli::SubcommandRunner {
    auto n = std::make_shared<int>(0);
    sub.add_option("-n", *n);
    return [n, &seen](std::ostream& out, std::ostream&) {
      seen = *n;
      out << "stub " << *n << "\n";
      return 0;
    };
  });
  CHECK(table.names() == std::vector<std::string>{"bleu", "chrf", "stub"});
  CHECK(score_table().names() ==
        std::vector<std::string>{"bleu", "chrf", "aer", "ppl", "pairs", "sentences", "experts"});
  std::ostringstream out, err;
  CHECK(table.run({"moe-score", "stub", "-n", "7", "--cpu-threads", "1"}, out, err) == 0);
  CHECK(seen == 7);
  CHECK_THROWS(table.add("bleu", "again", nullptr));
}

TEST_CASE("moe-score on real data: identical files score 100", "[metrics][cli][data]") {
  const std::string ref = std::string(MOE_SHARED_DATA) + "/multi30k/test_2016_flickr.de";
  if (!fs::exists(ref)) {
    WARN("skipping: " << ref << " not found");
    return;
  }
  Result a = run({"bleu", "-r", ref, "-i", ref, "-b"});
  CHECK(a.rc == 0);
  CHECK(a.out == "100.00\n");
  Result c = run({"chrf", "-r", ref, "-i", ref, "-b"});
  CHECK(c.out == "100.00\n");
  const std::string en = std::string(MOE_SHARED_DATA) + "/multi30k/test_2016_flickr.en";
  Result x = run({"bleu", "-r", ref, "-i", en, "-f", "json"});
  CHECK(x.rc == 0);
  CHECK_THAT(x.out, Catch::Contains("\"sys_len\": "));
}
