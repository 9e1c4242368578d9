// CUDA emulator: the kernel registry. Every __global__ instantiation compiled into the program
// registers at start-up (launch.h's KernelSite, one per kernel body, with its source file) and marks
// itself launched at its first entry; kernel_coverage() lists them for the "never launched" check of
// tests/gpu, and unlaunched_kernels() counts the __global__ definitions of the sources themselves, so
// that a template never instantiated (hence never registered) is listed too. The entry also checks
// the launch against the kernel's __launch_bounds__, which a GPU refuses to exceed.
// Covered by tests/gpu (coverage), tests/emu/checker_test.cpp (launch bounds) and
// tests/emu/blind_spot_test.cpp (the source count).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "moe_emu/control.h"
#include "reports.h"
#include "state.h"

namespace moe_emu {
namespace {
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::unique_ptr<KernelRecord>>& registry() {
  static std::vector<std::unique_ptr<KernelRecord>> r;
  return r;
}

/// At exit, with MOE_KERNEL_TRACE_OUT=PATH: the kernels launched (PATH) and compiled (PATH.compiled,
/// "name TAB name"), as scripts/gpu-check.sh's kernel trace writes them on a GPU (its rehearsal).
void write_trace() {
  const char* path = std::getenv("MOE_KERNEL_TRACE_OUT");
  if (!path) return;
  std::ofstream launched(path), compiled(std::string(path) + ".compiled");
  for (const KernelCoverage& k : kernel_coverage()) {
    if (k.launched) launched << k.name << "\n";
    compiled << k.name << "\t" << k.name << "\n";
  }
}
}  // namespace

KernelRecord* register_kernel(const char* tag_type_name, const char* file) {
  auto k = std::make_unique<KernelRecord>();
  k->name = kernel_display_name(tag_type_name);
  k->file = file;
  std::lock_guard<std::mutex> lock(registry_mutex());
  if (registry().empty()) std::atexit(write_trace);
  registry().push_back(std::move(k));
  return registry().back().get();
}

void kernel_entry(KernelRecord* const* kernel, unsigned launch_bound) {
  ThreadState& t = current_thread();
  Launch& L = *t.worker->launch;
  if (t.tid != 0) return;
  L.kernel.store(*kernel, std::memory_order_relaxed);
  if (launch_bound && L.threads_per_block > launch_bound)
    report(t, ReportKind::launch_bound, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
           "launched with " + std::to_string(L.threads_per_block) + " threads per block, above its __launch_bounds__(" +
               std::to_string(launch_bound) + "): a GPU refuses the launch (too many resources requested)",
           true);
}

std::vector<KernelCoverage> kernel_coverage() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<KernelCoverage> out;
  for (const auto& k : registry())
    out.push_back(KernelCoverage{k->name, k->launched.load(), k->max_threads.load(), k->max_dynamic_shared.load()});
  std::sort(out.begin(), out.end(), [](const KernelCoverage& a, const KernelCoverage& b) { return a.name < b.name; });
  return out;
}

namespace {
/// The unqualified name of a kernel display name ("ns::(anonymous namespace)::softmax_kernel<float, 4>").
std::string base_name(std::string s) {
  drop_trailing_group(s, '<', '>');
  const size_t colon = s.rfind("::");
  return colon == std::string::npos ? s : s.substr(colon + 2);
}

/// The text with comments, string and character literals blanked (newlines kept).
std::string code_only(const std::string& s) {
  std::string out = s;
  for (size_t i = 0; i < s.size(); ++i) {
    size_t end = i;
    if (s.compare(i, 2, "//") == 0) end = s.find('\n', i);
    else if (s.compare(i, 2, "/*") == 0) end = s.find("*/", i + 2) + 1;
    else if (s[i] == '"' || s[i] == '\'') {
      for (end = i + 1; end < s.size() && s[end] != s[i]; ++end)
        if (s[end] == '\\') ++end;
    } else continue;
    if (end == std::string::npos || end == 0) end = s.size() - 1;
    for (size_t j = i; j <= end && j < s.size(); ++j)
      if (out[j] != '\n') out[j] = ' ';
    i = end;
  }
  return out;
}

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

struct Definition {
  std::string name;
  int line;
};
/// The __global__ functions defined (with a body) in one source.
std::vector<Definition> global_definitions(const std::string& text) {
  const std::string s = code_only(text);
  std::vector<Definition> out;
  for (size_t at = s.find("__global__"); at != std::string::npos; at = s.find("__global__", at + 10)) {
    if ((at > 0 && ident(s[at - 1])) || ident(s[at + 10])) continue;
    for (size_t k = at + 10; k < s.size();) {
      if (!ident(s[k])) {
        ++k;
        continue;
      }
      size_t e = k;
      while (e < s.size() && ident(s[e])) ++e;
      const std::string word = s.substr(k, e - k);
      size_t next = e;
      while (next < s.size() && std::isspace(static_cast<unsigned char>(s[next]))) ++next;
      if (next < s.size() && s[next] == '(') {
        int depth = 0;
        size_t close = next;
        for (; close < s.size(); ++close)
          if (s[close] == '(') ++depth;
          else if (s[close] == ')' && --depth == 0) break;
        if (word != "__launch_bounds__" && word != "__align__" && word != "__attribute__" && word != "alignas" &&
            word != "decltype") {
          const size_t body = s.find_first_of("{;", close);
          if (body != std::string::npos && s[body] == '{')
            out.push_back(Definition{word, int(std::count(s.begin(), s.begin() + long(k), '\n')) + 1});
          break;
        }
        k = close + 1;
        continue;
      }
      k = e;
    }
  }
  return out;
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  const auto p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}
}  // namespace

std::vector<std::string> unlaunched_kernels(const std::string& source_dir) {
  std::set<std::pair<std::string, std::string>> launched, compiled;  // (file, base name)
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (const auto& k : registry()) {
      const auto key = std::make_pair(canonical(k->file), base_name(k->name));
      compiled.insert(key);
      if (k->launched) launched.insert(key);
    }
  }
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(source_dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string ext = it->path().extension().string();
    if (!it->is_regular_file() || (ext != ".cu" && ext != ".cuh")) continue;
    std::ifstream in(it->path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string file = canonical(it->path().string());
    for (const Definition& d : global_definitions(text.str())) {
      const auto key = std::make_pair(file, d.name);
      if (launched.count(key)) continue;
      out.push_back(d.name + " (" + it->path().string() + ":" + std::to_string(d.line) + "): " +
                    (compiled.count(key) ? "never launched" : "no instantiation compiled into this program"));
    }
  }
  if (ec) out.push_back("cannot read the sources in " + source_dir + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace moe_emu
