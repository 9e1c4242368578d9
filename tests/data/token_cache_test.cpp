// Token cache: first run encodes and writes, second maps the same ids; a changed text or vocabulary
// rebuilds; a cache folder works for read-only corpora; a corrupt cache is rebuilt.
// Tests lib/data/token_cache.cpp.
#include "data/token_cache.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "data/vocab.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;
using Catch::Matchers::Contains;

namespace {
std::vector<std::vector<int32_t>> all(const EncodedCorpus& c) {
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < c.size(); ++i) out.emplace_back(c.sentence(i).begin(), c.sentence(i).end());
  return out;
}
}  // namespace

TEST_CASE("token cache: build, map, rebuild on change", "[data]") {
  const auto dir = test::temp_dir("cache");
  const auto text = test::write_file(dir + "/c.txt", "the cat sat\n\non the mat\n");
  const auto vpath = test::write_file(dir + "/v.txt", "the\ncat\nsat\non\n");
  WordVocab v(vpath);
  bool rebuilt = false;
  auto a = load_or_build_cache(text, v, vpath, "", {}, &rebuilt);
  CHECK(rebuilt);
  CHECK(!a.mapped());
  CHECK(std::filesystem::exists(cache_path(text, vpath)));
  const std::vector<std::vector<int32_t>> expect{{4, 5, 6}, {}, {7, 4, kUnkId}};
  CHECK(all(a) == expect);
  auto b = load_or_build_cache(text, v, vpath, "", {}, &rebuilt);
  CHECK(!rebuilt);
  CHECK(b.mapped());
  CHECK(all(b) == expect);
  CHECK(b.tokens() == 6);

  // vocabulary changed -> rebuilt with new ids
  test::write_file(vpath, "the\ncat\nsat\non\nmat\n");
  WordVocab v2(vpath);
  auto c = load_or_build_cache(text, v2, vpath, "", {}, &rebuilt);
  CHECK(rebuilt);
  CHECK(all(c)[2] == std::vector<int32_t>{7, 4, 8});
  // text changed -> rebuilt
  test::write_file(text, "mat mat\n");
  auto d = load_or_build_cache(text, v2, vpath, "", {}, &rebuilt);
  CHECK(rebuilt);
  CHECK(all(d) == std::vector<std::vector<int32_t>>{{8, 8}});
  // corrupt cache (truncated) -> rebuilt
  std::filesystem::resize_file(cache_path(text, vpath), 20);
  auto e = load_or_build_cache(text, v2, vpath, "", {}, &rebuilt);
  CHECK(rebuilt);
  CHECK(all(e) == all(d));
  load_or_build_cache(text, v2, vpath, "", {}, &rebuilt);
  CHECK(!rebuilt);
  // a damaged body under a matching header (ids or offsets out of range) -> rebuilt, never mapped
  // (found by tests/fuzz/lm_text.cpp: the ids were read past the vocabulary)
  for (const auto& [at, value] : std::vector<std::pair<int, int64_t>>{{-4, 1 << 30}, {-16, 99}}) {
    std::fstream f(cache_path(text, vpath), std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(at, std::ios::end);
    f.write(reinterpret_cast<const char*>(&value), 4);
    f.close();
    auto g = load_or_build_cache(text, v2, vpath, "", {}, &rebuilt);
    CHECK(rebuilt);
    CHECK(all(g) == all(d));
  }
  ReadOptions skip;  // other read options -> another key
  skip.skip_invalid_utf8 = true;
  load_or_build_cache(text, v2, vpath, "", skip, &rebuilt);
  CHECK(rebuilt);
  // invalid UTF-8: an error without the option (even when a skip-mode cache exists), blanked with it
  test::write_file(text, "mat\n\xFF the\n");
  auto f = load_or_build_cache(text, v2, vpath, "", skip, &rebuilt);
  CHECK(all(f) == std::vector<std::vector<int32_t>>{{8}, {}});
  CHECK_THROWS_WITH(load_or_build_cache(text, v2, vpath, "", {}, &rebuilt),
                    Contains("c.txt") && Contains("line 2") && Contains("invalid UTF-8"));
}

TEST_CASE("token cache: cache folder for read-only corpora", "[data]") {
  if (!test::have_shared("1b-word-sample/news.en.heldout-00000-of-00050")) {
    WARN("no shared data: skipped");
    return;
  }
  const auto dir = test::temp_dir("cache_ro");
  const auto text = test::shared("1b-word-sample/news.en.heldout-00000-of-00050");
  const auto vpath = test::write_file(dir + "/v.txt", "the\n,\n.\nof\n");
  WordVocab v(vpath);
  bool rebuilt = false;
  auto a = load_or_build_cache(text, v, vpath, dir, {}, &rebuilt);
  CHECK(rebuilt);
  CHECK(a.size() == 6075);
  CHECK(a.tokens() == 153583);  // the benchmark's word count (</s> added later by the LM stream)
  auto b = load_or_build_cache(text, v, vpath, dir, {}, &rebuilt);
  CHECK(!rebuilt);
  CHECK(b.tokens() == 153583);
  CHECK(std::filesystem::path(cache_path(text, vpath, dir)).parent_path() == std::filesystem::path(dir));
}
