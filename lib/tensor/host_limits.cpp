// host_limits.h implementation: getrlimit, /proc/self/statm, /proc/self/cgroup and /proc/self/mountinfo.
// Covered by tests/unit/host_limits_test.cpp.
#include "tensor/host_limits.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tensor/allocator.h"

namespace moe {

namespace {
namespace fs = std::filesystem;

std::string first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

/// Mount points of the cgroup v2 hierarchy and of v1's memory controller ("" when absent).
void cgroup_mounts(std::string& v2, std::string& v1_memory) {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    // "36 25 0:31 / /sys/fs/cgroup/memory rw,... - cgroup cgroup rw,memory"
    std::istringstream is(line);
    std::string id, parent, dev, root, mount_point, field;
    is >> id >> parent >> dev >> root >> mount_point;
    while (is >> field && field != "-") {
    }
    std::string type, source, options;
    is >> type >> source >> options;
    if (type == "cgroup2" && v2.empty()) v2 = mount_point;
    if (type == "cgroup" && ("," + options + ",").find(",memory,") != std::string::npos) v1_memory = mount_point;
  }
}

/// The smallest limit in `file` along `dir` and its parents up to `mount`.
size_t smallest_limit(const fs::path& mount, const std::string& cgroup, const char* file) {
  size_t best = 0;
  for (fs::path dir = mount / fs::path(cgroup).relative_path();; dir = dir.parent_path()) {
    std::error_code ec;
    if (fs::exists(dir / file, ec)) {
      const size_t limit = parse_cgroup_limit(first_line(dir / file));
      if (limit && (!best || limit < best)) best = limit;
    }
    if (dir == mount || !dir.has_relative_path() || dir.string().size() <= mount.string().size()) break;
  }
  return best;
}

size_t cgroup_memory_limit() {
  std::string v2, v1;
  cgroup_mounts(v2, v1);
  std::ifstream in("/proc/self/cgroup");
  size_t best = 0;
  for (std::string line; std::getline(in, line);) {  // "0::/path" (v2) or "4:memory:/path" (v1)
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    size_t limit = 0;
    if (line.compare(0, a, "0") == 0 && controllers.empty() && !v2.empty())
      limit = smallest_limit(v2, path, "memory.max");
    else if (("," + controllers + ",").find(",memory,") != std::string::npos && !v1.empty())
      limit = smallest_limit(v1, path, "memory.limit_in_bytes");
    if (limit && (!best || limit < best)) best = limit;
  }
  return best;
}
}  // namespace

size_t parse_cgroup_limit(const std::string& text) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return 0;  // "max"
  const unsigned long long v = std::stoull(text);
  return v >= (1ull << 60) ? 0 : static_cast<size_t>(v);  // v1 writes "no limit" as about 2^63
}

HostLimits HostLimits::current() {
  HostLimits l;
  struct rlimit r {};
  if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) l.address_space = r.rlim_cur;
  l.cgroup_memory = cgroup_memory_limit();
  return l;
}

std::string HostLimits::describe() const {
  std::string s;
  if (address_space) s = "address space limited to " + format_bytes(address_space) + " (ulimit -v)";
  if (cgroup_memory) s += (s.empty() ? "" : ", ") + std::string("cgroup memory limit ") + format_bytes(cgroup_memory);
  return s.empty() ? "no memory limit found" : s;
}

size_t address_space_in_use() {
  std::ifstream in("/proc/self/statm");
  size_t pages = 0;
  if (!(in >> pages)) return 0;
  return pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace moe
