// fault_injection.h implementation. Covered by tests/unit/fault_injection_test.cpp.
#include "common/fault_injection.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace moe {

WriteFault parse_fault_injection(const std::string& value) {
  const std::string usage = "MOE_FAULT_INJECT='" + value + "' is not write:N or write:N:ENOSPC|EIO (N >= 1)";
  MOE_CHECK(value.rfind("write:", 0) == 0, usage);
  const std::string rest = value.substr(6);
  const size_t colon = rest.find(':');
  const std::string number = rest.substr(0, colon),
                    error = colon == std::string::npos ? "ENOSPC" : rest.substr(colon + 1);
  MOE_CHECK(!number.empty() && number.size() < 10 && number.find_first_not_of("0123456789") == std::string::npos,
            usage);
  WriteFault f;
  f.file = std::stoll(number);
  MOE_CHECK(f.file >= 1, usage);
  MOE_CHECK(error == "ENOSPC" || error == "EIO", usage);
  f.error = error == "EIO" ? EIO : ENOSPC;
  return f;
}

int next_file_write_fault(const std::string& path) {
  static const WriteFault fault = [] {
    const char* v = std::getenv("MOE_FAULT_INJECT");
    return v && *v ? parse_fault_injection(v) : WriteFault{};
  }();
  static std::atomic<int64_t> files{0};
  const int64_t n = ++files;
  if (fault.file != n) return 0;
  std::fprintf(stderr, "MOE_FAULT_INJECT: the write of %s (file %lld) fails with %s\n", path.c_str(),
               static_cast<long long>(n), std::strerror(fault.error));
  return fault.error;
}

}  // namespace moe
