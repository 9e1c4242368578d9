// Corpus reading (plain/gzip via zlib's transparent gzread), UTF-8 checks, alignment checks and the
// length filter. Errors name file and line. Covered by tests/data/corpus_test.cpp.
#include "data/corpus.h"

#include <spdlog/spdlog.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "common/error.h"
#include "data/utf8.h"

namespace moe::data {

LineReader::LineReader(const std::string& path) : path_(path), buf_(1 << 16) {
  gzFile f = gzopen(path.c_str(), "rb");
  MOE_CHECK(f != nullptr, "corpus: cannot open '", path, "': ", std::strerror(errno));
  gzbuffer(f, 1 << 17);
  gz_ = f;
}

LineReader::~LineReader() {
  if (gz_) gzclose(static_cast<gzFile>(gz_));
}

bool LineReader::next(std::string& line) {
  // buf_[pos_, end_) holds unread decompressed bytes; lines are cut at '\n' with memchr (NUL bytes
  // inside a line are kept, so they cannot merge lines; the UTF-8 check accepts them as ASCII).
  auto* f = static_cast<gzFile>(gz_);
  line.clear();
  while (true) {
    if (pos_ < end_) {
      const char* b = buf_.data() + pos_;
      const void* nl = std::memchr(b, '\n', end_ - pos_);
      if (nl) {
        const size_t n = static_cast<const char*>(nl) - b;
        line.append(b, n);
        pos_ += n + 1;
        break;
      }
      line.append(b, end_ - pos_);
      pos_ = end_;
    }
    if (eof_) {
      if (line.empty()) return false;  // nothing after the last '\n'
      break;
    }
    const int got = gzread(f, buf_.data(), static_cast<unsigned>(buf_.size()));
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      MOE_FAIL("corpus: read error in '", path_, "' after line ", line_number_, ": ", msg);
    }
    pos_ = 0;
    end_ = static_cast<size_t>(got);
    if (got == 0) eof_ = true;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

namespace {
// Checks one line; returns false if it must be replaced by "" (skip mode), throws otherwise.
bool check_line(const std::string& line, const LineReader& r, const ReadOptions& opts) {
  const size_t bad = find_invalid_utf8(line);
  if (bad == std::string::npos) return true;
  MOE_CHECK(opts.skip_invalid_utf8, "corpus: invalid UTF-8 in '", r.path(), "' line ", r.line_number(), " at byte ",
            bad, " (use the option to skip invalid lines)");
  return false;
}

void log_stats(const std::string& path, const ReadStats& s) {
  if (s.invalid_utf8) spdlog::warn("corpus: {}: skipped {} lines with invalid UTF-8", path, s.invalid_utf8);
  if (s.empty) spdlog::info("corpus: {}: {} empty lines of {}", path, s.empty, s.lines);
}
}  // namespace

std::vector<std::string> read_lines(const std::string& path, const ReadOptions& opts, ReadStats* stats) {
  LineReader r(path);
  ReadStats s;
  std::vector<std::string> out;
  std::string line;
  while (r.next(line)) {
    ++s.lines;
    if (!check_line(line, r, opts)) {
      ++s.invalid_utf8;
      line.clear();
    }
    if (line.empty()) ++s.empty;
    out.push_back(std::move(line));
  }
  log_stats(path, s);
  if (stats) *stats = s;
  return out;
}

ParallelText read_parallel(const std::string& src_path, const std::string& tgt_path, const ReadOptions& opts,
                           ReadStats* src_stats, ReadStats* tgt_stats) {
  ParallelText t;
  ReadStats ss, ts;
  t.src = read_lines(src_path, opts, &ss);
  t.tgt = read_lines(tgt_path, opts, &ts);
  MOE_CHECK(t.src.size() == t.tgt.size(), "corpus: parallel files are misaligned: '", src_path, "' has ",
            t.src.size(), " lines, '", tgt_path, "' has ", t.tgt.size());
  if (src_stats) *src_stats = ss;
  if (tgt_stats) *tgt_stats = ts;
  return t;
}

int64_t check_aligned(const std::string& src_path, const std::string& tgt_path) {
  auto count = [](const std::string& p) {
    LineReader r(p);
    std::string line;
    while (r.next(line)) {
    }
    return r.line_number();
  };
  const int64_t a = count(src_path), b = count(tgt_path);
  MOE_CHECK(a == b, "corpus: parallel files are misaligned: '", src_path, "' has ", a, " lines, '", tgt_path,
            "' has ", b);
  return a;
}

LengthFilter::Verdict LengthFilter::check(int64_t src_len, int64_t tgt_len) const {
  if (src_len == 0 || tgt_len == 0) return Verdict::empty;
  if ((max_src_len > 0 && src_len > max_src_len) || (max_tgt_len > 0 && tgt_len > max_tgt_len))
    return Verdict::too_long;
  if (max_ratio > 0) {
    const double r = src_len > tgt_len ? double(src_len) / tgt_len : double(tgt_len) / src_len;
    if (r > max_ratio) return Verdict::bad_ratio;
  }
  return Verdict::keep;
}

std::string FilterStats::summary() const {
  std::ostringstream os;
  os << "kept " << kept << " of " << (kept + empty + too_long + bad_ratio) << " pairs; skipped " << empty
     << " empty, " << too_long << " over the length limit, " << bad_ratio << " over the ratio limit";
  return os.str();
}

std::vector<std::string_view> blank_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (size_t i = 0;;) {
    i = line.find_first_not_of(" \t\r", i);
    if (i == std::string_view::npos) return fields;
    const size_t end = std::min(line.find_first_of(" \t\r", i), line.size());
    fields.push_back(line.substr(i, end - i));
    i = end;
  }
}

std::string shown(std::string_view text) {
  std::string out(text.substr(0, 60));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text.size() > 60 ? out + "..." : out;
}

}  // namespace moe::data
