// The CPU threading model (common/cpu_threads.h): parallel_for covers [0, n) exactly once in
// contiguous parts, honours min_per_thread, runs nested calls serially; --cpu-threads parsing;
// rerun_with_runtime_env leaves a chosen GOMP_SPINCOUNT, OPENBLAS_NUM_THREADS and OPENBLAS_CORETYPE alone.
#include "common/cpu_threads.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/program.h"

using namespace moe;

namespace {
struct ThreadCount {  // sets the count for one test and restores it
  int old = cpu_threads();
  explicit ThreadCount(int n) { set_cpu_threads(n); }
  ~ThreadCount() { set_cpu_threads(old); }
};
}  // namespace

TEST_CASE("parallel_for: every index once, in contiguous parts", "[unit][threads]") {
  ThreadCount t(3);
  REQUIRE(cpu_threads() == 3);
  for (int64_t n : {0, 1, 2, 3, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int> parts{0};
    parallel_for(n, 1, [&](int64_t lo, int64_t hi) {
      CHECK(lo < hi);
      ++parts;
      for (int64_t i = lo; i < hi; ++i) ++hits[static_cast<size_t>(i)];
    });
    for (auto& h : hits) REQUIRE(h.load() == 1);
    CHECK(parts.load() == std::min<int64_t>(n, 3));
  }
}

TEST_CASE("parallel_for: min_per_thread limits the parts; nested calls run serially", "[unit][threads]") {
  ThreadCount t(4);
  std::atomic<int> parts{0};
  parallel_for(100, 40, [&](int64_t, int64_t) { ++parts; });
  CHECK(parts.load() == 2);  // 100 / 40 = 2 threads at most
  parts = 0;
  parallel_for(100, 1000, [&](int64_t lo, int64_t hi) {
    ++parts;
    CHECK((lo == 0 && hi == 100));
  });
  CHECK(parts.load() == 1);
  std::atomic<int> inner{0};
  parallel_for(4, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      parallel_for(10, 1, [&](int64_t a, int64_t b) {
        CHECK((a == 0 && b == 10));  // one serial part
        ++inner;
      });
  });
  CHECK(inner.load() == 4);
}

TEST_CASE("--cpu-threads: applied when parsed, bad values refused", "[unit][threads]") {
  ThreadCount t(1);
  auto parse = [](std::vector<std::string> args) {
    CLI::App app("test", "prog");
    std::string model;
    app.add_option("-m", model);
    moe::cli::add_cpu_threads_option(app);
    std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
    app.parse(args);
  };
  parse({"-m", "x", "--cpu-threads", "3"});
  CHECK(cpu_threads() == 3);
  parse({"--cpu-threads=2", "-m", "y"});
  CHECK(cpu_threads() == 2);
  for (const std::string bad : {"x", "-1", "2k", "2000"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse({"--cpu-threads=" + bad}), CLI::ParseError);
  }
  CHECK_THROWS_AS(parse({"--cpu-threads"}), CLI::ParseError);  // no value
  CHECK(cpu_threads() == 2);
  set_cpu_threads(0);
  CHECK(cpu_threads() == physical_cores());
  CHECK(physical_cores() >= 1);
}

TEST_CASE("rerun_with_runtime_env: no rerun when the spin and OpenBLAS's kernels are already chosen",
          "[unit][threads]") {
  // With GOMP_SPINCOUNT (or OMP_WAIT_POLICY), OPENBLAS_NUM_THREADS and OPENBLAS_CORETYPE set the call returns at
  // once and changes nothing; every program run by the script tests exercises the rerun itself.
  struct Saved {
    const char* name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved;
  for (const char* name : {"GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE"}) {
    const char* v = std::getenv(name);
    saved.push_back({name, v != nullptr, v ? v : ""});
  }
  setenv("GOMP_SPINCOUNT", "123", 1);
  setenv("OPENBLAS_NUM_THREADS", "3", 1);
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  std::string prog = "not-run";
  char* argv[] = {prog.data(), nullptr};
  rerun_with_runtime_env(argv);
  CHECK(std::string(std::getenv("GOMP_SPINCOUNT")) == "123");
  CHECK(std::string(std::getenv("OPENBLAS_NUM_THREADS")) == "3");
  CHECK(std::string(std::getenv("OPENBLAS_CORETYPE")) == "Haswell");
  for (const Saved& s : saved) s.had ? setenv(s.name, s.value.c_str(), 1) : unsetenv(s.name);
}
