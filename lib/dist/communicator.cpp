// communicator.h implementation, the backend-independent part: argument checks, byte counts, the
// watchdog thread, the small-value helpers and the backend factory. Covered by
// tests/dist/communicator_test.cpp.
#include "dist/communicator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common/error.h"

namespace moe::dist {

class Communicator::Watch {
 public:
  Watch(Communicator& c, const char* op, const Tensor& t) : c_(c) {
    c_.bytes_ += static_cast<int64_t>(t.defined() ? t.bytes() : 0);
    if (c_.world() == 1 || c_.timeout_s_ <= 0) return;
    std::lock_guard<std::mutex> lock(c_.mu_);
    if (!c_.watchdog_.joinable()) c_.watchdog_ = std::thread([comm = &c_] { comm->watchdog_loop(); });
    c_.in_flight_ = op;
    c_.since_ = std::chrono::steady_clock::now();
  }
  ~Watch() {
    std::lock_guard<std::mutex> lock(c_.mu_);
    c_.in_flight_.clear();
  }

 private:
  Communicator& c_;
};

Communicator::Communicator(LaunchEnv env) : env_(std::move(env)) {}

Communicator::~Communicator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void Communicator::watchdog_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200));
    if (in_flight_.empty() || timeout_s_ <= 0) continue;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
    if (waited < timeout_s_) continue;
    spdlog::error("moe dist: rank {} of {}: {} did not complete within {} s (dist.timeout): another rank died or "
                  "hangs; aborting the job",
                  rank(), world(), in_flight_, timeout_s_);
    std::fflush(nullptr);
    abort_job(3);
  }
}

void Communicator::abort_job(int code) { std::_Exit(code); }

void Communicator::all_reduce(const Tensor& t) {
  Watch w(*this, "all_reduce", t);
  if (t.numel() > 0) do_all_reduce(t);
}

void Communicator::all_reduce_bucketed(const Tensor& t, int64_t bucket_elements) {
  MOE_CHECK(bucket_elements > 0, "all_reduce_bucketed: bucket size must be > 0, got ", bucket_elements);
  const Tensor flat = t.view(Shape{t.numel()});
  for (int64_t begin = 0; begin < t.numel(); begin += bucket_elements)
    all_reduce(flat.flat_range(begin, std::min(bucket_elements, t.numel() - begin)));
}

void Communicator::broadcast(const Tensor& t, int root) {
  MOE_CHECK(root >= 0 && root < world(), "broadcast: root ", root, " is not a rank of ", world());
  Watch w(*this, "broadcast", t);
  if (t.numel() > 0) do_broadcast(t, root);
}

void Communicator::all_gather(const Tensor& in, const Tensor& out) {
  check_gather("all_gather", in, out, world());
  Watch w(*this, "all_gather", in);
  do_all_gather(in, out);
}

void Communicator::reduce_scatter(const Tensor& in, const Tensor& out) {
  check_gather("reduce_scatter", out, in, world());
  Watch w(*this, "reduce_scatter", in);
  do_reduce_scatter(in, out);
}

void Communicator::all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_rows, const Tensor& out,
                                const std::vector<int64_t>& recv_rows) {
  check_counts("all_to_all_v", send_rows, world(), in, "send");
  check_counts("all_to_all_v", recv_rows, world(), out, "receive");
  MOE_CHECK(in.dtype() == out.dtype() && row_elements("all_to_all_v", in) == row_elements("all_to_all_v", out),
            "all_to_all_v: input ", dtype_name(in.dtype()), " ", in.shape(), " and output ", dtype_name(out.dtype()),
            " ", out.shape(), " differ in dtype or row size");
  Watch w(*this, "all_to_all_v", in);
  do_all_to_all_v(in, send_rows, out, recv_rows);
}

void Communicator::barrier() {
  Watch w(*this, "barrier", Tensor());
  do_barrier();
}

double Communicator::sum(double value) {
  if (world() == 1) return value;
  Tensor t = Tensor::scalar(value, DType::f64, Device::cpu());
  all_reduce(t);
  return t.item();
}

int64_t Communicator::sum(int64_t value) {
  if (world() == 1) return value;
  Tensor t = Tensor::from_vector(std::vector<int64_t>{value}, Shape{1});
  all_reduce(t);
  return t.to_vector<int64_t>()[0];
}

std::vector<int64_t> Communicator::exchange_counts(const std::vector<int64_t>& send) {
  const int64_t n = world();
  MOE_CHECK(static_cast<int64_t>(send.size()) == n, "exchange_counts: ", send.size(), " counts for ", n, " ranks");
  const Tensor in = Tensor::from_vector(send, Shape{n});
  const Tensor out = Tensor::zeros(Shape{n}, DType::i64, Device::cpu());
  const std::vector<int64_t> ones(static_cast<size_t>(n), 1);
  all_to_all_v(in, ones, out, ones);
  return out.to_vector<int64_t>();
}

void check_gather(const char* op, const Tensor& small, const Tensor& big, int world) {
  MOE_CHECK(small.defined() && big.defined(), op, ": undefined tensor");
  MOE_CHECK(small.dtype() == big.dtype() && big.numel() == small.numel() * world, op, ": the per-rank tensor ",
            dtype_name(small.dtype()), " ", small.shape(), " and the whole ", dtype_name(big.dtype()), " ",
            big.shape(), " must have the same dtype and world (", world, ") times the elements");
  MOE_CHECK(small.device() == big.device(), op, ": tensors on ", small.device(), " and ", big.device());
}

int64_t row_elements(const char* op, const Tensor& t) {
  MOE_CHECK(t.defined() && t.shape().ndim() >= 1, op, ": needs tensors with at least one axis, got ", t.shape());
  int64_t n = 1;  // the product of the trailing axes (also for a tensor of 0 rows)
  for (int i = 1; i < t.shape().ndim(); ++i) n *= t.shape()[i];
  return n;
}

void check_counts(const char* op, const std::vector<int64_t>& counts, int world, const Tensor& t, const char* side) {
  MOE_CHECK(static_cast<int>(counts.size()) == world, op, ": ", counts.size(), " ", side, " counts for ", world,
            " ranks");
  int64_t total = 0;
  for (int64_t c : counts) {
    MOE_CHECK(c >= 0, op, ": negative ", side, " count ", c);
    total += c;
  }
  row_elements(op, t);
  MOE_CHECK(total == t.shape()[0], op, ": ", side, " counts add up to ", total, " rows but the tensor has ",
            t.shape()[0], " (shape ", t.shape(), ")");
}

std::vector<std::string> available_backends() {
  std::vector<std::string> b{"none"};
#ifdef MOE_WITH_MPI
  b.push_back("mpi");
#if defined(MOE_WITH_CUDA) && defined(MOE_WITH_NCCL)
  b.push_back("nccl");
#endif
#endif
  return b;
}

std::unique_ptr<Communicator> make_communicator(const std::string& backend, Device device) {
  std::string b = backend;
  const LaunchEnv env = launch_env_from_environment();
  const std::vector<std::string> have = available_backends();
  auto has = [&](const std::string& name) { return std::find(have.begin(), have.end(), name) != have.end(); };
  if (b == "auto") {
    if (env.launcher == "none" && env.world == 1)
      b = "none";
    else
      b = device.is_cuda() && has("nccl") ? "nccl" : "mpi";
  }
  std::string list;
  for (const auto& h : have) list += (list.empty() ? "" : ", ") + h;
  MOE_CHECK(b == "none" || b == "mpi" || b == "nccl", "--dist.backend: unknown backend '", backend,
            "' (auto, nccl, mpi or none)");
  MOE_CHECK(has(b), "--dist.backend ", b, ": this build has no ", b, " backend (it has ", list,
            "); rebuild with OpenMPI (libopenmpi-dev) found", b == "nccl" ? " and CUDA" : "");
  if (b == "none") {
    MOE_CHECK(env.world == 1, "--dist.backend none, but the launcher (", env.launcher, ") started ", env.world,
              " ranks; use auto or mpi");
    return make_local_communicator();
  }
  if (b == "nccl") {
    MOE_CHECK(device.is_cuda(), "--dist.backend nccl needs train.device cuda, not ", device.str());
    return make_nccl_communicator(device);
  }
  MOE_CHECK(device.is_cpu(), "--dist.backend mpi moves CPU tensors; train.device is ", device.str(),
            " (use nccl or auto)");
  return make_mpi_communicator();
}

}  // namespace moe::dist
