// Reading corpora: one sentence per line, plain or gzip (zlib reads both), monolingual or parallel
// (two line-aligned files). Misaligned files, invalid UTF-8 and unreadable files are errors naming
// the file and line; with skip_invalid_utf8 a bad line is counted and replaced by an empty line
// (which the training filters then drop, so parallel files stay aligned). LengthFilter is the
// fairseq/Marian training filter (max length per side, max length ratio, no empty side).
// Covered by tests/data/corpus_test.cpp.
#pragma once
#include <charconv>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace moe::data {

/// Streams the lines of a plain or .gz text file without the trailing "\n" / "\r\n".
class LineReader {
 public:
  explicit LineReader(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  /// Reads the next line into `line`; false at end of file. Read errors throw moe::Error.
  bool next(std::string& line);
  /// 1-based number of the line last returned.
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* gz_ = nullptr;  // gzFile
  int64_t line_number_ = 0;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
};

struct ReadOptions {
  bool skip_invalid_utf8 = false;  // false: invalid UTF-8 is an error naming file and line
};

struct ReadStats {
  int64_t lines = 0;         // lines read (per file)
  int64_t invalid_utf8 = 0;  // lines replaced by "" because of invalid UTF-8
  int64_t empty = 0;         // empty lines (after the replacement above)
};

/// All lines of a file, checked for UTF-8. Logs the counts of skipped lines (spdlog).
std::vector<std::string> read_lines(const std::string& path, const ReadOptions& opts = {}, ReadStats* stats = nullptr);

struct ParallelText {
  std::vector<std::string> src, tgt;
};

/// Two line-aligned files. Different line counts: moe::Error naming both files and both counts.
ParallelText read_parallel(const std::string& src_path, const std::string& tgt_path, const ReadOptions& opts = {},
                           ReadStats* src_stats = nullptr, ReadStats* tgt_stats = nullptr);

/// Text of a file for an error message: control bytes as '?', at most 60 bytes (then "...").
std::string shown(std::string_view text);

/// The fields of a line between blanks (spaces, tabs, a carriage return), views into `line`.
std::vector<std::string_view> blank_fields(std::string_view line);

/// A field of a text file as a number, all of it ("1.5", not "1.5x" or ""); false when it is not one.
template <class T>
bool parse_number(std::string_view text, T& out) {
  const auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

/// Counts the lines of two files and throws if they differ (cheap alignment check).
int64_t check_aligned(const std::string& src_path, const std::string& tgt_path);

/// Training filter on token counts (0 = no limit). Empty sides are always dropped.
struct LengthFilter {
  int64_t max_src_len = 0;
  int64_t max_tgt_len = 0;
  double max_ratio = 0;  // max(len_s/len_t, len_t/len_s); 0 = no limit

  enum class Verdict { keep, empty, too_long, bad_ratio };
  Verdict check(int64_t src_len, int64_t tgt_len) const;
};

struct FilterStats {
  int64_t kept = 0, empty = 0, too_long = 0, bad_ratio = 0;
  /// "kept K of N pairs; skipped E empty, L over the length limit, R over the ratio limit"
  std::string summary() const;
};

}  // namespace moe::data
