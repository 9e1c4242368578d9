// atomic_file.h implementation (POSIX open / write / fsync / rename).
// Covered by tests/unit/safetensors_test.cpp.
#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace moe {

void AtomicFileWriter::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    MOE_CHECK(w > 0, "writing ", tmp_, " failed: ", std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void write_file_atomic(const std::string& path, const std::function<void(AtomicFileWriter&)>& body) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  MOE_CHECK(fd >= 0, "cannot create ", tmp, ": ", std::strerror(errno));
  try {
    AtomicFileWriter out(fd, tmp);
    body(out);
    MOE_CHECK(::fsync(fd) == 0, "fsync of ", tmp, " failed: ", std::strerror(errno));
  } catch (...) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  ::close(fd);
  MOE_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename ", tmp, " to ", path, ": ",
            std::strerror(errno));
}

void write_file_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, [&](AtomicFileWriter& out) { out.write(text.data(), text.size()); });
}

}  // namespace moe
