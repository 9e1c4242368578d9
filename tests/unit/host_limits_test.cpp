// tensor/host_limits.h: cgroup limit files ("max", v1's "no limit" near 2^63, a byte count), RLIMIT_AS as
// the process has it (set in a forked child), and the text errors show.
#include "tensor/host_limits.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>

using namespace moe;

TEST_CASE("host limits: cgroup limit files", "[tensor][limits]") {
  CHECK(parse_cgroup_limit("max") == 0);
  CHECK(parse_cgroup_limit("9223372036854771712") == 0);
  CHECK(parse_cgroup_limit("") == 0);
  CHECK(parse_cgroup_limit("123456789012345678901234567890") == 0);  // no exception on absurd text
  CHECK(parse_cgroup_limit("1073741824") == size_t(1) << 30);
  CHECK(HostLimits{}.describe() == "no memory limit found");
  CHECK(HostLimits{size_t(3) << 30, size_t(16) << 30}.describe() ==
        "address space limited to 3.00 GiB (ulimit -v), cgroup memory limit 16.00 GiB");
}

TEST_CASE("host limits: the address-space limit and what is in use", "[tensor][limits]") {
  CHECK(address_space_in_use() > 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    rlimit r{};
    ::getrlimit(RLIMIT_AS, &r);
    r.rlim_cur = std::min<rlim_t>(rlim_t(64) << 40, r.rlim_max);
    const bool ok = ::setrlimit(RLIMIT_AS, &r) == 0 && HostLimits::current().address_space == r.rlim_cur;
    ::_exit(ok ? 0 : 1);
  }
  int status = 1;
  ::waitpid(pid, &status, 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}
