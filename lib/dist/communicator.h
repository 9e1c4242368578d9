// Communicator: the collectives that data- and expert-parallel training need, over one of three
// backends (make_communicator): "none" (a single process: every collective is the identity),
// "mpi" (CPU tensors, OpenMPI; mpi_communicator.cpp) and "nccl" (CUDA tensors, the NCCL unique id
// broadcast over MPI; nccl_communicator.cpp, built only with CUDA). Tensors are contiguous (whole
// tensors, rows() or flat_range() views); every rank calls the same collectives in the same order.
//   all_reduce(t)            t <- sum over ranks of t (in place; f32, f64, i64, i32)
//   all_reduce_bucketed(t,b) the same in consecutive pieces of b elements (what the trainer's buckets do)
//   broadcast(t, root)       t <- root's t
//   all_gather(in, out)      out = concat over ranks r of in_r (out has world * in.numel() elements)
//   reduce_scatter(in, out)  out = chunk `rank` of sum over ranks of in (in has world * out.numel())
//   all_to_all_v(in, send, out, recv)  rows of in, send[r] to rank r in rank order; out gets recv[r]
//                            rows from rank r in rank order (rows: dim 0; counts must agree pairwise)
//   barrier()
// A watchdog (dist.timeout seconds) aborts the job with an error naming the collective and the rank
// that waited when a collective does not complete (a dead or hung peer), instead of hanging.
// Covered by tests/dist/communicator_test.cpp (run by mpirun -np 2 and -np 4, and as one process).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/launch_env.h"
#include "tensor/tensor.h"

namespace moe::dist {

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual const char* backend() const = 0;
  /// A communicator over the same ranks whose collectives never mix with this one's (MPI_Comm_dup):
  /// what a second thread uses (a collective: every rank calls it).
  virtual std::unique_ptr<Communicator> dup() = 0;
  int rank() const { return env_.rank; }
  int world() const { return env_.world; }
  int local_rank() const { return env_.local_rank; }
  const LaunchEnv& env() const { return env_; }

  void all_reduce(const Tensor& t);
  void all_reduce_bucketed(const Tensor& t, int64_t bucket_elements);
  void broadcast(const Tensor& t, int root);
  void all_gather(const Tensor& in, const Tensor& out);
  void reduce_scatter(const Tensor& in, const Tensor& out);
  void all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_rows, const Tensor& out,
                    const std::vector<int64_t>& recv_rows);
  void barrier();
  /// Ends every process of the job (the watchdog's last resort; a rank's error in training); never returns.
  [[noreturn]] virtual void abort_job(int code);

  /// Helpers over all_reduce / all_to_all_v of small host tensors.
  double sum(double value);
  int64_t sum(int64_t value);
  /// recv[r] = what rank r passes as send[me] (an all-to-all of one count per rank).
  std::vector<int64_t> exchange_counts(const std::vector<int64_t>& send);

  /// Seconds a collective may take before the watchdog aborts the job (0 = no watchdog).
  void set_timeout(double seconds) { timeout_s_ = seconds; }
  /// Bytes this process handed to collectives since the last reset (the payload, per rank).
  int64_t bytes() const { return bytes_; }
  void reset_bytes() { bytes_ = 0; }

 protected:
  explicit Communicator(LaunchEnv env);
  virtual void do_all_reduce(const Tensor& t) = 0;
  virtual void do_broadcast(const Tensor& t, int root) = 0;
  virtual void do_all_gather(const Tensor& in, const Tensor& out) = 0;
  virtual void do_reduce_scatter(const Tensor& in, const Tensor& out) = 0;
  virtual void do_all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_rows, const Tensor& out,
                               const std::vector<int64_t>& recv_rows) = 0;
  virtual void do_barrier() = 0;
  LaunchEnv env_;

 private:
  class Watch;  // marks one collective as in flight for the watchdog
  void watchdog_loop();

  double timeout_s_ = 600;
  int64_t bytes_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string in_flight_;  // the collective now running ("" = none)
  std::chrono::steady_clock::time_point since_;
  bool stop_ = false;
  std::thread watchdog_;
};

/// backend: "auto" (nccl for a CUDA device when built with CUDA and launched by MPI/Slurm, mpi when
/// launched with several ranks, else none), "nccl", "mpi" or "none". device: the training device
/// (nccl needs CUDA, mpi the CPU). An unknown or unavailable backend is an error naming it.
std::unique_ptr<Communicator> make_communicator(const std::string& backend, Device device);
/// The backends this build has ("none", "mpi" when built with MPI, "nccl" when built with CUDA and MPI).
std::vector<std::string> available_backends();

/// The single-process backend (world 1).
std::unique_ptr<Communicator> make_local_communicator();
std::unique_ptr<Communicator> make_mpi_communicator();                // mpi_communicator.cpp
std::unique_ptr<Communicator> make_nccl_communicator(Device device);  // nccl_communicator.cpp

/// Checks shared by the backends: contiguous sizes of all_gather / reduce_scatter / all_to_all_v.
void check_gather(const char* op, const Tensor& small, const Tensor& big, int world);
int64_t row_elements(const char* op, const Tensor& t);
void check_counts(const char* op, const std::vector<int64_t>& counts, int world, const Tensor& t, const char* side);

}  // namespace moe::dist
