// Alignment error rate (lib/metrics/aer.h, moe-score aer): gold links parse as sure ("s-t") and possible ("s?t",
// "spt"; the sure ones are possible too), 0- or 1-based; malformed links and possible links in a hypothesis are
// errors; AER, precision and recall follow Och & Ney's formulas on a corpus worked by hand (sums over the lines
// before dividing), 0 for a perfect hypothesis, 1 for a disjoint one; the subcommand prints them as text and JSON
// and names the file and line of a bad link, and refuses files of different line counts.
#include "metrics/aer.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "moe-score/score_program.h"

using namespace moe;
using namespace moe::metrics;
using Catch::Matchers::Contains;

TEST_CASE("aer: gold and hypothesis links", "[metrics][aer]") {
  const GoldLinks g = parse_gold_links("0-0 1?2\t2p1 3-3:0.5\r");
  CHECK(g.sure == std::set<Link>{{0, 0}, {3, 3}});
  CHECK(g.possible == std::set<Link>{{0, 0}, {1, 2}, {2, 1}, {3, 3}});
  CHECK(parse_gold_links("1-1 2p3", true).possible == std::set<Link>{{0, 0}, {1, 2}});
  CHECK(parse_gold_links("").possible.empty());
  CHECK(parse_hypothesis_links("2-1 0-0 2-1 4-3:0.25") == std::set<Link>{{0, 0}, {2, 1}, {4, 3}});
  for (const char* bad : {"1", "1-", "-1", "a-1", "1-2-3", "1x2", "1--2"})
    CHECK_THROWS_WITH(parse_gold_links(std::string("0-0 ") + bad), Contains("link 2") && Contains(bad));
  CHECK_THROWS_WITH(parse_gold_links("0-0", true), Contains("counted from 1"));
  CHECK_THROWS_WITH(parse_hypothesis_links("0-0 1p2"), Contains("1p2 is a possible link"));
}

TEST_CASE("aer: Och and Ney's formulas over a corpus", "[metrics][aer]") {
  AerCounts c;
  // line 1: A = {00, 11, 22, 33}, S = {00, 11}, P = S + {22}; line 2: A = {12}, S = {00}, P = S + {12}
  c.add({{0, 0}, {1, 1}, {2, 2}, {3, 3}}, parse_gold_links("0-0 1-1 2p2"));
  c.add({{1, 2}}, parse_gold_links("0-0 1?2"));
  CHECK(c.hypothesis == 5);
  CHECK(c.sure == 3);
  CHECK(c.possible == 5);
  CHECK(c.hit_sure == 2);
  CHECK(c.hit_possible == 4);
  CHECK(c.aer() == Approx(1 - 6.0 / 8));  // 1 - (2 + 4) / (5 + 3)
  CHECK(c.precision() == Approx(4.0 / 5));
  CHECK(c.recall() == Approx(2.0 / 3));
  AerCounts perfect, disjoint, none;
  perfect.add({{0, 0}, {1, 1}}, parse_gold_links("0-0 1-1 1p2"));
  CHECK(perfect.aer() == 0);
  disjoint.add({{5, 5}}, parse_gold_links("0-0 1p1"));
  CHECK(disjoint.aer() == 1);
  CHECK(disjoint.precision() == 0);
  CHECK((none.aer() == 0 && none.precision() == 1 && none.recall() == 1));
}

TEST_CASE("moe-score aer on files", "[metrics][aer][cli]") {
  const auto dir = std::filesystem::temp_directory_path() / ("moe_aer_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string gold = write("gold.talp", "1-1 2-2 3p3\n1-1 2?3\n"),
                    hyp = write("hyp.txt", "0-0 1-1 2-2 3-3\n1-2\n");
  auto run = [](std::vector<std::string> args, std::string& out, std::string& err) {
    args.insert(args.begin(), "moe-score");
    std::ostringstream o, e;
    const int rc = score_table().run(args, o, e);
    out = o.str();
    err = e.str();
    return rc;
  };
  std::string out, err;
  const std::string zero = write("gold0.txt", "0-0 1-1 2p2\n0-0 1?2\n");
  REQUIRE(run({"aer", "-r", zero, "-i", hyp}, out, err) == 0);
  CHECK(out ==
        "AER = 25.00 (precision 80.00, recall 66.67; 2 lines, 5 hypothesis links, 3 sure and 5 possible gold "
        "links)\n");
  const std::string hyp1 = write("hyp1.txt", "1-1 2-2 3-3 4-4\n2-3\n");
  REQUIRE(run({"aer", "-r", gold, "-i", hyp1, "--one-based", "-f", "json", "-w", "1"}, out, err) == 0);
  CHECK(out ==
        "{\"name\": \"AER\", \"score\": 25.0, \"precision\": 80.0, \"recall\": 66.7, \"lines\": 2, "
        "\"hypothesis_links\": 5, \"sure_links\": 3, \"possible_links\": 5}\n");
  const std::string bad = write("bad.txt", "0-0\n1-x\n");
  CHECK(run({"aer", "-r", zero, "-i", bad}, out, err) != 0);
  CHECK_THAT(err, Contains("bad.txt:2") && Contains("'1-x'"));
  const std::string short_hyp = write("short.txt", "0-0\n");
  CHECK(run({"aer", "-r", zero, "-i", short_hyp}, out, err) != 0);
  CHECK_THAT(err, Contains("line counts differ") && Contains("short.txt") && Contains("gold0.txt"));
  std::filesystem::remove_all(dir);
}
