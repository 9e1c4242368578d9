// Errors: moe::Error and the MOE_CHECK(cond, parts...) macro.
// MOE_CHECK streams its message parts (anything with operator<<) into one string, so it works in
// .cpp and .cu files alike without a formatting library. Covered by tests/unit/tensor_test.cpp.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace moe {

/// Every error the toolkit reports to a user is a moe::Error with a readable message.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown when a device allocation fails even after the allocator's cache was released.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
[[noreturn]] void fail(const char* file, int line, const std::string& message);
}  // namespace detail

}  // namespace moe

#define MOE_CHECK(cond, ...)                                                    \
  do {                                                                          \
    if (!(cond)) ::moe::detail::fail(__FILE__, __LINE__, ::moe::detail::concat(__VA_ARGS__)); \
  } while (0)

#define MOE_FAIL(...) ::moe::detail::fail(__FILE__, __LINE__, ::moe::detail::concat(__VA_ARGS__))
