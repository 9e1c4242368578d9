// The "mpi" backend: CPU tensors through MPI_COMM_WORLD (Debian's OpenMPI). MPI is initialised once
// per process with MPI_THREAD_MULTIPLE (the trainer's gradient buckets run collectives on their own
// thread, over a duplicate of the communicator: dup()) and finalised at exit. Errors come back as return codes
// (MPI_ERRORS_RETURN) and become exceptions naming the collective, the rank and MPI's message.
// all_reduce and reduce_scatter sum f32/f64/i64/i32; the others move bytes of any dtype. all_to_all_v
// counts are rows, turned into byte counts and displacements (MPI_Alltoallv with MPI_BYTE, so one
// call moves any row size up to 2 GiB per peer). Built only when CMake finds MPI (MOE_WITH_MPI).
// Covered by tests/dist/communicator_test.cpp under mpirun -np 2 and -np 4.
#include "dist/communicator.h"

#ifdef MOE_WITH_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only (no C++ bindings and their warnings)
#include <mpi.h>

#include <climits>
#include <cstdlib>

#include "common/error.h"

namespace moe::dist {

namespace {

void check_mpi(int code, const char* op, int rank) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  MOE_FAIL("moe dist (mpi): ", op, " failed on rank ", rank, ": ", std::string(text, static_cast<size_t>(len)));
}

MPI_Datatype sum_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i64: return MPI_INT64_T;
    case DType::i32: return MPI_INT32_T;
    default: MOE_FAIL("all_reduce (mpi): cannot sum ", dtype_name(t), " tensors (f32, f64, i64 or i32)");
  }
}

int to_int(int64_t n, const char* op) {
  MOE_CHECK(n <= INT_MAX, op, " (mpi): ", n, " bytes in one message exceed MPI's int count; use smaller buckets");
  return static_cast<int>(n);
}

void check_cpu(const Tensor& t, const char* op) {
  MOE_CHECK(t.device().is_cpu(), op, " (mpi): the mpi backend moves CPU tensors, got one on ", t.device(),
            " (use --dist.backend nccl)");
}

LaunchEnv init_mpi() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    MOE_CHECK(provided >= MPI_THREAD_MULTIPLE, "moe dist (mpi): this MPI offers thread level ", provided,
              ", the trainer needs MPI_THREAD_MULTIPLE (gradient buckets and expert all-to-alls run on two threads)");
    std::atexit([] {
      int finalised = 0;
      MPI_Finalized(&finalised);
      if (!finalised) MPI_Finalize();
    });
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  LaunchEnv env = launch_env_from_environment();
  MPI_Comm_rank(MPI_COMM_WORLD, &env.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &env.world);
  if (env.launcher == "none") env.launcher = "mpi";
  return env;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() : Communicator(init_mpi()), comm_(MPI_COMM_WORLD) {}
  MpiCommunicator(LaunchEnv env, MPI_Comm comm) : Communicator(std::move(env)), comm_(comm) {}
  ~MpiCommunicator() override {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (comm_ != MPI_COMM_WORLD && !finalised) MPI_Comm_free(&comm_);
  }
  const char* backend() const override { return "mpi"; }
  std::unique_ptr<Communicator> dup() override {
    MPI_Comm copy;
    check_mpi(MPI_Comm_dup(comm_, &copy), "dup", rank());
    MPI_Comm_set_errhandler(copy, MPI_ERRORS_RETURN);
    return std::make_unique<MpiCommunicator>(env_, copy);
  }

 protected:
  void do_all_reduce(const Tensor& t) override {
    check_cpu(t, "all_reduce");
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, t.raw(), to_int(t.numel(), "all_reduce"), sum_type(t.dtype()), MPI_SUM,
                            comm_),
              "all_reduce", rank());
  }
  void do_broadcast(const Tensor& t, int root) override {
    check_cpu(t, "broadcast");
    check_mpi(MPI_Bcast(t.raw(), to_int(static_cast<int64_t>(t.bytes()), "broadcast"), MPI_BYTE, root, comm_),
              "broadcast", rank());
  }
  void do_all_gather(const Tensor& in, const Tensor& out) override {
    check_cpu(in, "all_gather");
    check_cpu(out, "all_gather");
    const int n = to_int(static_cast<int64_t>(in.bytes()), "all_gather");
    check_mpi(MPI_Allgather(in.raw(), n, MPI_BYTE, out.raw(), n, MPI_BYTE, comm_), "all_gather", rank());
  }
  void do_reduce_scatter(const Tensor& in, const Tensor& out) override {
    check_cpu(in, "reduce_scatter");
    check_cpu(out, "reduce_scatter");
    // An all-reduce of a copy, then this rank's chunk: Debian OpenMPI 4.1's MPI_Reduce_scatter_block
    // measured 12 times slower than MPI_Allreduce of the same 16 MB (moe-bench dist.collectives).
    Tensor sum = in.clone();
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, sum.raw(), to_int(sum.numel(), "reduce_scatter"), sum_type(in.dtype()),
                            MPI_SUM, comm_),
              "reduce_scatter", rank());
    Tensor(out).copy_from(sum.flat_range(out.numel() * rank(), out.numel()));
  }
  void do_all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_rows, const Tensor& out,
                       const std::vector<int64_t>& recv_rows) override {
    check_cpu(in, "all_to_all_v");
    check_cpu(out, "all_to_all_v");
    const int64_t row_bytes = row_elements("all_to_all_v", in) * static_cast<int64_t>(dtype_size(in.dtype()));
    const size_t n = static_cast<size_t>(world());
    std::vector<int> sc(n), sd(n), rc(n), rd(n);
    int64_t s_off = 0, r_off = 0;
    for (size_t r = 0; r < n; ++r) {
      sc[r] = to_int(send_rows[r] * row_bytes, "all_to_all_v");
      rc[r] = to_int(recv_rows[r] * row_bytes, "all_to_all_v");
      sd[r] = to_int(s_off, "all_to_all_v");
      rd[r] = to_int(r_off, "all_to_all_v");
      s_off += sc[r];
      r_off += rc[r];
    }
    // MPI wants valid buffer addresses even for empty tensors.
    static char dummy = 0;
    void* sbuf = in.numel() ? in.raw() : &dummy;
    void* rbuf = out.numel() ? out.raw() : &dummy;
    check_mpi(MPI_Alltoallv(sbuf, sc.data(), sd.data(), MPI_BYTE, rbuf, rc.data(), rd.data(), MPI_BYTE,
                            comm_),
              "all_to_all_v", rank());
  }
  void do_barrier() override { check_mpi(MPI_Barrier(comm_), "barrier", rank()); }
  [[noreturn]] void abort_job(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  MPI_Comm comm_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace moe::dist

#else  // no MPI in this build

#include "common/error.h"

namespace moe::dist {
std::unique_ptr<Communicator> make_mpi_communicator() {
  MOE_FAIL("moe dist: this build has no MPI backend (CMake did not find MPI; install libopenmpi-dev)");
}
}  // namespace moe::dist

#endif
