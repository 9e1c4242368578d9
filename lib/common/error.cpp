// Out-of-line part of error.h: builds the message of a failed MOE_CHECK.
#include "common/error.h"

#include <cstdlib>

namespace moe::detail {

void fail(const char* file, int line, const std::string& message) {
  // Users see the message; MOE_DEBUG_LOCATION=1 appends where in the source it was raised.
  const char* debug = std::getenv("MOE_DEBUG_LOCATION");
  if (debug && debug[0] == '1') throw Error(message + " [" + file + ":" + std::to_string(line) + "]");
  throw Error(message);
}

}  // namespace moe::detail
