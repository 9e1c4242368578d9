// What every libFuzzer harness of tests/fuzz shares: the input written to a file (most parsers read
// paths), the one accepted way to reject an input (a moe::Error whose message names the input), and
// FUZZ_REQUIRE for the invariants a harness checks on what was accepted. Any other exception escapes
// LLVMFuzzerTestOneInput, which libFuzzer reports as a crash, as it does a sanitizer report or a leak.
// Built by cmake/fuzz.cmake (clang, ASan, UBSan, libFuzzer) and by tests/CMakeLists.txt, which replays
// the seeds with replay_main.cpp in every build (ctest fuzz_seeds_*).
#pragma once
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "../support/temp_dirs.h"
#include "common/error.h"

#define FUZZ_REQUIRE(cond, what)                                                                                   \
  do {                                                                                                             \
    if (!(cond)) {                                                                                                 \
      std::fprintf(stderr, "fuzz invariant broken at %s:%d: %s\n", __FILE__, __LINE__, std::string(what).c_str()); \
      std::abort();                                                                                                \
    }                                                                                                              \
  } while (0)

namespace moe::fuzz {

/// The parsers' log lines (spdlog) are off: millions of inputs would flood the fuzzer's output.
inline const bool kLogsOff = (spdlog::set_level(spdlog::level::off), true);

/// A folder of this process's own under $TMPDIR (or /tmp), made on first use, reused, removed at exit.
inline const std::string& scratch_dir() {
  static const std::string dir = test::fresh_temp_dir("moe-fuzz-" + std::to_string(::getpid())).string();
  return dir;
}

/// The bytes of a file.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FUZZ_REQUIRE(in.good(), "cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Writes `bytes` to `path`, replacing what it held.
inline void overwrite_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  FUZZ_REQUIRE(out.good(), "cannot write " + path);
}

/// Writes `bytes` to scratch_dir()/name and returns the path.
inline std::string write_file(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  overwrite_file(path, bytes);
  return path;
}

/// Runs `parse`; true when it accepted the input. A moe::Error is the expected rejection: its message
/// must be non-empty, hold no NUL byte and say which input it is about (contain `must_name`, e.g. the
/// file's path, when that is not empty).
template <class Parse>
bool accepts(Parse&& parse, const std::string& must_name) {
  try {
    parse();
    return true;
  } catch (const moe::Error& e) {
    const std::string_view msg = e.what();
    FUZZ_REQUIRE(!msg.empty(), "an empty error message");
    FUZZ_REQUIRE(msg.find(must_name) != std::string_view::npos,
                 "the error does not name '" + must_name + "': " + std::string(msg));
    FUZZ_REQUIRE(msg.find('\0') == std::string_view::npos, "the error message holds a NUL byte");
    return false;
  }
}

/// The input split at `sep` (every field, empty ones too).
inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

}  // namespace moe::fuzz
