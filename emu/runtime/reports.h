// CUDA emulator (emu/README.md): the checker's reports. Emulated threads record raw reports (kind,
// program counters, block and thread); after the launch the host thread names the kernel, turns the
// program counters into source lines (addr2line on the running program), prints each report to
// stderr and keeps it for moe_emu::take_reports(). Covered by tests/emu/checker_test.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "vector_types.h"

namespace moe_emu {

enum class ReportKind {
  race,
  out_of_bounds,
  misaligned,
  uninitialized_read,
  async_in_flight,
  divergent_barrier,
  deadlock,
  warp_misuse,
  wmma_misuse,
  launch_bound,
  shared_memory_limit,
  trap,
  wrong_device,
  api_misuse,
  stream_race,
  host_access,
  async_misuse,  // Hopper's asynchronous operations and mbarriers used against their rules
};
const char* kind_name(ReportKind kind);

struct RawReport {
  ReportKind kind;
  uintptr_t pc = 0, other_pc = 0;
  uint3 block{}, thread{}, other_thread{};
  bool has_other = false;
  uintptr_t addr = 0;
  std::string detail;
  bool fatal = false;
};

/// A source file's path relative to the repository ("cuda/ops/softmax.cu"), however the compiler saw it.
std::string source_path(const std::string& path);
/// "cuda/ops/softmax.cu:57" for a program counter (with the inline chain: "reduce.cuh:30 <- softmax.cu:57").
std::string source_line(uintptr_t pc);
/// Drops a trailing bracketed group ("f<int, 2>" -> "f" for '<', '>'), nested groups included.
void drop_trailing_group(std::string& s, char open, char close);
/// The kernel's display name from a local tag type's name ("...::softmax_kernel<float, 4>").
std::string kernel_display_name(const char* tag_type_name);

/// Formats, prints and keeps the reports of a finished launch; returns the first one's text ("" if none).
std::string publish_reports(const std::string& kernel, const std::vector<RawReport>& reports, size_t dropped);
/// A report made outside a kernel (an API call with bad arguments): printed and kept; returns its text.
std::string publish_api_report(ReportKind kind, const std::string& text);

}  // namespace moe_emu
