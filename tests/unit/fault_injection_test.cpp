// common/fault_injection.h: MOE_FAULT_INJECT values and the errors that name a malformed one. (What a
// failed checkpoint write leaves behind, with the variable set: tests/scripts/disk_faults.sh.)
#include "common/fault_injection.h"

#include <catch2/catch.hpp>
#include <cerrno>

#include "common/error.h"

using namespace moe;

TEST_CASE("fault injection: write:N[:ENOSPC|EIO]", "[faults]") {
  CHECK(parse_fault_injection("write:3").file == 3);
  CHECK(parse_fault_injection("write:3").error == ENOSPC);
  CHECK(parse_fault_injection("write:1:EIO").error == EIO);
  CHECK(parse_fault_injection("write:12:ENOSPC").file == 12);
  for (const char* bad : {"write:0", "write:", "write:x", "write:2:EPERM", "read:1", "write:-1", "write:99999999999"})
    CHECK_THROWS_WITH(parse_fault_injection(bad), Catch::Contains("MOE_FAULT_INJECT='" + std::string(bad) + "'"));
}
