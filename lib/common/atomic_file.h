// Atomic file writes: the bytes go to "<path>.tmp.<pid>", are flushed with fsync and renamed over
// <path>, so a crash mid-write leaves any previous file intact and readers never see a partial file.
// Used by checkpoints (tensor/safetensors.h), training state and the dumped configuration. A failed write
// (a full disk, an I/O error: the error names the file) removes the temporary file and leaves the previous
// one as it was (MOE_FAULT_INJECT=write:N fakes one: common/fault_injection.h).
// Covered by tests/unit/safetensors_test.cpp, tests/unit/fault_injection_test.cpp and tests/scripts/disk_faults.sh.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <utility>

namespace moe {

/// The open temporary file of an atomic write.
class AtomicFileWriter {
 public:
  AtomicFileWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  /// Writes all `n` bytes; an error names the file being written and the system's reason.
  void write(const void* data, size_t n);

 private:
  int fd_;
  std::string path_;
};

/// Runs `body` on a temporary file next to `path`, fsyncs it and renames it over `path`. When `body`
/// or the flush throws, the temporary file is removed and `path` is left as it was.
void write_file_atomic(const std::string& path, const std::function<void(AtomicFileWriter&)>& body);
/// Writes `text` to `path` atomically.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace moe
