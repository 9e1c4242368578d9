// atomic_file.h implementation (POSIX open / write / fsync / rename).
// Covered by tests/unit/safetensors_test.cpp.
#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "common/fault_injection.h"

namespace moe {

namespace {
/// What a failed write of `path` says: the file, the error, and that the previous file is untouched.
std::string write_failure(const std::string& path, const std::string& step, int error) {
  return "writing " + path + " failed (" + step + "): " + std::strerror(error) + "; any previous " + path +
         " is left as it was";
}
}  // namespace

void AtomicFileWriter::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    MOE_CHECK(w > 0, write_failure(path_, "write", w < 0 ? errno : ENOSPC));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void write_file_atomic(const std::string& path, const std::function<void(AtomicFileWriter&)>& body) {
  const int fault = next_file_write_fault(path);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  MOE_CHECK(fd >= 0, "cannot create ", tmp, " (to write ", path, "): ", std::strerror(errno));
  try {
    AtomicFileWriter out(fd, path);
    body(out);
    MOE_CHECK(fault == 0, write_failure(path, "write, injected by MOE_FAULT_INJECT", fault));
    MOE_CHECK(::fsync(fd) == 0, write_failure(path, "fsync", errno));
  } catch (...) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {  // network file systems may report a failed write only here
    const int error = errno;
    std::remove(tmp.c_str());
    MOE_FAIL(write_failure(path, "close", error));
  }
  MOE_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename ", tmp, " to ", path, ": ",
            std::strerror(errno));
}

void write_file_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, [&](AtomicFileWriter& out) { out.write(text.data(), text.size()); });
}

}  // namespace moe
