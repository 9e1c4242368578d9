// CUDA emulator: naming, printing and keeping the checker's reports (reports.h). Program counters
// become source lines through addr2line on the running program (once per address, cached); kernel
// names come from the demangled tag type of the kernel's body. Covered by tests/emu/checker_test.cpp.
#include "reports.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "moe_emu/control.h"

namespace moe_emu {

std::string source_path(const std::string& path) {
  std::string p = std::filesystem::path(path).lexically_normal().string();
#ifdef MOE_EMU_SOURCE_DIR
  const std::string root = MOE_EMU_SOURCE_DIR;
  if (p.compare(0, root.size(), root) == 0) p.erase(0, root.size());
#endif
  size_t up = 0;  // ccache's base_dir makes paths relative to the build folder
  while (p.compare(up, 3, "../") == 0) up += 3;
  return p.substr(up);
}

namespace {
std::mutex g_mutex;
std::vector<Report> g_reports;
std::map<uintptr_t, std::string> g_lines;


std::string run_addr2line(const std::string& file, uintptr_t address) {
  char cmd[4096];
  std::snprintf(cmd, sizeof(cmd), "addr2line -C -f -i -e '%s' 0x%lx 2>/dev/null", file.c_str(),
                static_cast<unsigned long>(address));
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd, "r"), pclose);
  if (!pipe) return "";
  std::vector<std::string> lines;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe.get())) {
    std::string l(buf);
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    lines.push_back(l);
  }
  // Pairs of (function, file:line), innermost first.
  std::string out;
  for (size_t i = 1; i < lines.size(); i += 2) {
    std::string loc = lines[i];
    const size_t d = loc.find(" (discriminator");
    if (d != std::string::npos) loc.resize(d);
    if (loc.rfind("??", 0) == 0) continue;
    if (!out.empty()) out += " <- ";
    out += source_path(loc);
  }
  return out;
}
}  // namespace

const char* kind_name(ReportKind kind) {
  switch (kind) {
    case ReportKind::race: return "race";
    case ReportKind::out_of_bounds: return "out-of-bounds";
    case ReportKind::misaligned: return "misaligned";
    case ReportKind::uninitialized_read: return "uninitialized-read";
    case ReportKind::async_in_flight: return "async-copy-in-flight";
    case ReportKind::divergent_barrier: return "divergent-barrier";
    case ReportKind::deadlock: return "deadlock";
    case ReportKind::warp_misuse: return "warp-misuse";
    case ReportKind::wmma_misuse: return "wmma-misuse";
    case ReportKind::launch_bound: return "launch-bound";
    case ReportKind::shared_memory_limit: return "shared-memory-limit";
    case ReportKind::trap: return "trap";
    case ReportKind::wrong_device: return "wrong-device";
    case ReportKind::api_misuse: return "api-misuse";
    case ReportKind::stream_race: return "stream-race";
    case ReportKind::host_access: return "pending-host-access";
    case ReportKind::async_misuse:
      return "async-misuse";
  }
  return "unknown";
}

std::string source_line(uintptr_t pc) {
  if (!pc) return "?";
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_lines.find(pc);
    if (it != g_lines.end()) return it->second;
  }
  std::string text;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(pc), &info) && info.dli_fbase) {
    const auto* ehdr = static_cast<const Elf64_Ehdr*>(info.dli_fbase);
    const uintptr_t base = ehdr->e_type == ET_DYN ? reinterpret_cast<uintptr_t>(info.dli_fbase) : 0;
    // The main program's dli_fname may be a relative argv[0]: /proc/self/exe names it (resolved here:
    // in addr2line's process it would name addr2line).
    Dl_info self{};
    dladdr(reinterpret_cast<void*>(&source_line), &self);
    std::string file = info.dli_fname;
    if (self.dli_fbase == info.dli_fbase) {
      char exe[4096];
      const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
      if (n > 0) file.assign(exe, size_t(n));
    }
    text = run_addr2line(file, pc - 1 - base);  // pc is a return address: the call is just before it
  }
  if (text.empty()) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "pc 0x%lx", static_cast<unsigned long>(pc));
    text = buf;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_lines[pc] = text;
  return text;
}

void drop_trailing_group(std::string& s, char open, char close) {
  if (s.empty() || s.back() != close) return;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == close) ++depth;
    else if (s[i] == open && --depth == 0) {
      s.resize(i);
      return;
    }
  }
}

std::string kernel_display_name(const char* tag_type_name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(tag_type_name, nullptr, nullptr, &status), std::free);
  std::string s = status == 0 && d ? d.get() : tag_type_name;
  const std::string tag = "::moe_emu_kernel_tag";
  if (s.size() > tag.size() && s.compare(s.size() - tag.size(), tag.size(), tag) == 0) s.resize(s.size() - tag.size());
  drop_trailing_group(s, '(', ')');  // the parameter list
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);  // the return type of a template's name
  return s;
}

static std::string dims(uint3 v) {
  char b[48];
  std::snprintf(b, sizeof(b), "(%u,%u,%u)", v.x, v.y, v.z);
  return b;
}

std::string publish_reports(const std::string& kernel, const std::vector<RawReport>& reports, size_t dropped) {
  std::string first;
  for (const RawReport& r : reports) {
    std::ostringstream o;
    o << "moe-emu: " << kind_name(r.kind) << " in kernel " << kernel << ", block " << dims(r.block) << ", thread "
      << dims(r.thread) << ", at " << source_line(r.pc) << ": " << r.detail;
    if (r.has_other) o << " [the other side: thread " << dims(r.other_thread) << " at " << source_line(r.other_pc) << "]";
    const std::string text = o.str();
    std::fprintf(stderr, "%s\n", text.c_str());
    if (first.empty()) first = text;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_reports.push_back(Report{kind_name(r.kind), kernel, text});
  }
  if (dropped) std::fprintf(stderr, "moe-emu: %zu more reports in kernel %s not shown\n", dropped, kernel.c_str());
  return first;
}

std::string publish_api_report(ReportKind kind, const std::string& text) {
  const std::string full = std::string("moe-emu: ") + kind_name(kind) + ": " + text;
  std::fprintf(stderr, "%s\n", full.c_str());
  std::lock_guard<std::mutex> lock(g_mutex);
  g_reports.push_back(Report{kind_name(kind), "", full});
  return full;
}

std::vector<Report> take_reports() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<Report> out;
  out.swap(g_reports);
  return out;
}

}  // namespace moe_emu
