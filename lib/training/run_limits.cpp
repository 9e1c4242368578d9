// run_limits.h implementation. Covered by tests/training/run_limits_test.cpp.
#include "training/run_limits.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "tensor/allocator.h"
#include "training/training_state.h"

namespace moe {

namespace fs = std::filesystem;

CheckpointEstimate estimate_checkpoint(int64_t parameters, uint64_t vocab_bytes, Optimizer::Kind optimizer) {
  const uint64_t values = static_cast<uint64_t>(parameters) * 4,
                 buffers = optimizer == Optimizer::Kind::adam || optimizer == Optimizer::Kind::adamw ? 2 : 1;
  constexpr uint64_t kHeaders = 64 << 10;  // names, shapes and metadata (the model's YAML, the data position)
  return {values + vocab_bytes + kHeaders, values * buffers + kHeaders};
}

void create_run_dir(const std::string& run_dir) {
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  MOE_CHECK(!ec, "run_dir ", run_dir, " cannot be created: ", ec.message(), "; choose another run_dir");
  const std::string probe = (fs::path(run_dir) / (".moe-write-test." + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  MOE_CHECK(fd >= 0, "run_dir ", run_dir, " is not writable: cannot create a file in it (", std::strerror(errno),
            "); choose another run_dir");
  const bool written = ::write(fd, "moe\n", 4) == 4;
  const int error = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  MOE_CHECK(written, "run_dir ", run_dir, " is not writable: writing a file in it failed (", std::strerror(error), ")");
}

namespace {
uint64_t size_or_zero(const fs::path& p) {
  std::error_code ec;
  const uintmax_t n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}
}  // namespace

void check_room(const std::string& run_dir, const CheckpointEstimate& e, int64_t pairs_kept) {
  struct statvfs fsinfo {};
  MOE_CHECK(::statvfs(run_dir.c_str(), &fsinfo) == 0, "run_dir ", run_dir,
            ": cannot read its file system's free space (", std::strerror(errno), ")");
  const uint64_t free_bytes = static_cast<uint64_t>(fsinfo.f_bavail) * fsinfo.f_frsize;
  const std::string last = (fs::path(run_dir) / "checkpoint.last.safetensors").string();
  const uint64_t there = size_or_zero(last) + size_or_zero(state_path_for(last));
  const uint64_t need = 2 * e.pair() > there ? 2 * e.pair() - there : 0;
  MOE_CHECK(free_bytes >= need, "run_dir ", run_dir, " has ", format_bytes(free_bytes), " free, less than the ",
            format_bytes(need), " that two checkpoints need (each ", format_bytes(e.checkpoint),
            " and its training state ", format_bytes(e.state), ", estimated from the model",
            there ? ", counting the checkpoint.last already there" : "",
            "); free some space or choose another run_dir");
  const uint64_t fullest = static_cast<uint64_t>(pairs_kept + 1) * e.pair();
  if (free_bytes + there < fullest)
    spdlog::warn(
        "moe-train: run_dir {} has {} free; the checkpoints this run keeps ({} pairs of {} and one being "
        "written) may need up to {}",
        run_dir, format_bytes(free_bytes), pairs_kept, format_bytes(e.pair()), format_bytes(fullest));
}

std::string memory_advice(const TrainOptions& o, bool gpu) {
  std::string s = "; to need less memory: lower train.max_tokens (now " + std::to_string(o.max_tokens) +
                  ") and raise train.update_freq (now " + std::to_string(o.update_freq) +
                  ") by the same factor to keep the batch";
  if (gpu && o.dtype == DType::f32) s += ", or train.dtype bf16 (now f32)";
  return s + "; a smaller model (model.*) needs less too";
}

}  // namespace moe
