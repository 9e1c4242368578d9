// MOE_CHECK messages (lib/common/error.cpp): a NUL byte of user input is written as "\0", so the whole
// message survives being read as a C string (found by tests/fuzz/recipe.cpp).
#include "common/error.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

TEST_CASE("error: a NUL byte in a message is escaped, the rest of the message kept") {
  const std::string key("bad\0key", 7);
  try {
    MOE_FAIL("unknown key '", key, "' in recipe.yml");
    FAIL("no error");
  } catch (const moe::Error& e) {
    CHECK(std::string(e.what()) == "unknown key 'bad\\0key' in recipe.yml");
    CHECK(std::strlen(e.what()) == std::string(e.what()).size());
  }
}
