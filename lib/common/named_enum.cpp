// named_enum.h implementation. Covered by tests/config/keys_test.cpp.
#include "common/named_enum.h"

namespace moe {

std::vector<std::string> split_enum_names(const char* list) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = list;; ++p) {
    if (*p == ',' || *p == '\0') {
      out.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else if (*p != ' ' && *p != '\n' && *p != '\t') {
      cur += *p;
    }
  }
  return out;
}

}  // namespace moe
