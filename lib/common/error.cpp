// Out-of-line part of error.h: builds the message of a failed MOE_CHECK. Messages quote user input
// (keys, lines, file names); a NUL byte in it would cut the message short where what() is read as a C
// string (the key or the file name after it lost), so it is written as "\0". Covered by
// tests/unit/tensor_test.cpp and tests/unit/error_test.cpp.
#include "common/error.h"

#include <cstdlib>

namespace moe::detail {

void fail(const char* file, int line, const std::string& message) {
  std::string text;
  text.reserve(message.size());
  for (char c : message) {
    if (c == '\0')
      text += "\\0";
    else
      text += c;
  }
  // Users see the message; MOE_DEBUG_LOCATION=1 appends where in the source it was raised.
  const char* debug = std::getenv("MOE_DEBUG_LOCATION");
  if (debug && debug[0] == '1') text += " [" + std::string(file) + ":" + std::to_string(line) + "]";
  throw Error(text);
}

}  // namespace moe::detail
