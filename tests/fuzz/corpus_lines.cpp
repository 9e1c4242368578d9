// Fuzzes the corpus reader (lib/data/corpus.cpp: plain or gzip text through zlib, lines cut at '\n',
// a trailing '\r' dropped, UTF-8 checked or blanked). The first input byte picks the options (bit 0:
// skip_invalid_utf8, bit 1: a .gz file name), the rest is the file. Invariants: a bad file is a
// moe::Error naming it; accepted lines are valid UTF-8 without '\n'; a plain file gives one line per
// '\n' (plus an unterminated last one); read_parallel of the file with itself gives the same lines.
// Seeds: tests/fuzz/seeds/corpus_lines.
#include <algorithm>

#include "data/corpus.h"
#include "data/utf8.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  moe::data::ReadOptions opts;
  opts.skip_invalid_utf8 = (data[0] & 1) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string path = moe::fuzz::write_file((data[0] & 2) ? "corpus.gz" : "corpus.txt", text);
  std::vector<std::string> lines;
  moe::data::ReadStats stats;
  if (!moe::fuzz::accepts([&] { lines = moe::data::read_lines(path, opts, &stats); }, path)) return 0;
  FUZZ_REQUIRE(stats.lines == static_cast<int64_t>(lines.size()), "ReadStats.lines differs from the lines read");
  for (const auto& l : lines)
    FUZZ_REQUIRE(moe::data::is_valid_utf8(l) && l.find('\n') == std::string::npos, "a line with '\\n' or bad UTF-8");
  const bool gzip =
      text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b;
  if (!gzip) {
    size_t expected = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    if (!text.empty() && text.back() != '\n') ++expected;
    FUZZ_REQUIRE(lines.size() == expected, "the line count differs from the file's newlines");
  }
  const moe::data::ParallelText both = moe::data::read_parallel(path, path, opts);
  FUZZ_REQUIRE(both.src == lines && both.tgt == lines, "read_parallel differs from read_lines");
  return 0;
}
