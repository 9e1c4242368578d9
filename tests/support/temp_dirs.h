// Fresh folders for tests under the system temp directory ($TMPDIR or /tmp) or a given one, removed when the test program that
// made them exits normally, so that runs of the suite do not pile folders up in /tmp. MOE_KEEP_TEST_DIRS=1 keeps
// them (to look at a failure's files). A forked child (tests that fork end it with _exit) removes nothing.
// Used by the temp_dir helpers of tests/data, tests/training, tests/translator and tests/fuzz.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace moe::test {

/// base / leaf (base: temp_directory_path() by default), emptied and made; removed with its contents at exit.
inline std::filesystem::path fresh_temp_dir(const std::string& leaf,
                                            const std::filesystem::path& base = std::filesystem::temp_directory_path()) {
  struct Made {
    std::mutex mu;
    std::vector<std::filesystem::path> dirs;
    pid_t owner = ::getpid();
    ~Made() {
      const char* keep = std::getenv("MOE_KEEP_TEST_DIRS");
      if ((keep && *keep && std::string(keep) != "0") || ::getpid() != owner) return;
      for (const auto& d : dirs) {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    }
  };
  static Made made;
  const auto dir = base / leaf;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::lock_guard<std::mutex> lock(made.mu);
  made.dirs.push_back(dir);
  return dir;
}

}  // namespace moe::test
