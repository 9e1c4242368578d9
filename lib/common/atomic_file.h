// Atomic file writes: the bytes go to "<path>.tmp.<pid>", are flushed with fsync and renamed over
// <path>, so a crash mid-write leaves any previous file intact and readers never see a partial file.
// Used by checkpoints (tensor/safetensors.h), training state and the dumped configuration.
// Covered by tests/unit/safetensors_test.cpp.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace moe {

/// The open temporary file of an atomic write.
class AtomicFileWriter {
 public:
  AtomicFileWriter(int fd, std::string tmp_path) : fd_(fd), tmp_(std::move(tmp_path)) {}
  /// Writes all `n` bytes; an error names the file and the system's reason.
  void write(const void* data, size_t n);
  const std::string& tmp_path() const { return tmp_; }

 private:
  int fd_;
  std::string tmp_;
};

/// Runs `body` on a temporary file next to `path`, fsyncs it and renames it over `path`. When `body`
/// or the flush throws, the temporary file is removed and `path` is left as it was.
void write_file_atomic(const std::string& path, const std::function<void(AtomicFileWriter&)>& body);
/// Writes `text` to `path` atomically.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace moe
