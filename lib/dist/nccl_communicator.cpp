// The "nccl" backend: CUDA tensors through NCCL on the device of the local rank (train.device's
// cuda:<local rank>). Rank 0 makes the unique id and broadcasts it over MPI (so the job needs an MPI
// launcher: mpirun, or srun with PMIx), then every rank joins with ncclCommInitRankConfig
// (non-blocking). Each communicator has its own stream: a collective first makes it wait for an event
// recorded on moe's compute stream of the device (cuda/common/context.h), so it follows the kernels
// that produced its inputs while later kernels keep running (the gradient buckets overlap backward;
// dup()'s communicator never shares a stream with this one, so their collectives cannot block each
// other). Each call then waits for its stream with a polling loop that also asks
// ncclCommGetAsyncError, so a peer's failure ends in an error naming this rank instead of a hang
// (the Communicator's watchdog aborts the job after dist.timeout). all_to_all_v is grouped
// ncclSend/ncclRecv pairs. Built only with real CUDA when CMake finds nccl.h and libnccl beside the
// toolkit, and MPI (MOE_WITH_NCCL); the CUDA emulator has no NCCL, so CI compiles it in the nvcc build
// only; tests/gpu/nccl_communicator_test.cpp runs every call on a 1-rank communicator when a GPU is present.
#include "dist/communicator.h"

#include "common/error.h"

#if defined(MOE_WITH_NCCL)
#include <cuda_runtime.h>
#define OMPI_SKIP_MPICXX 1  // the C API only (no C++ bindings and their warnings)
#include <mpi.h>
#include <nccl.h>

#include <thread>

#include "common/context.h"

namespace moe::dist {

namespace {

void check_nccl(ncclResult_t r, const char* op, int rank) {
  MOE_CHECK(r == ncclSuccess || r == ncclInProgress, "moe dist (nccl): ", op, " failed on rank ", rank, ": ",
            ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType t, bool sum) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::bf16: return ncclBfloat16;
    case DType::f16: return ncclFloat16;
    case DType::i64: return ncclInt64;
    case DType::i32: return ncclInt32;
    case DType::u8: MOE_CHECK(!sum, "all_reduce (nccl): cannot sum u8 tensors"); return ncclUint8;
    default: MOE_FAIL("moe dist (nccl): unsupported dtype ", dtype_name(t));
  }
}

LaunchEnv nccl_env() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    std::atexit([] {
      int finalised = 0;
      MPI_Finalized(&finalised);
      if (!finalised) MPI_Finalize();
    });
  }
  LaunchEnv env = launch_env_from_environment();
  MPI_Comm_rank(MPI_COMM_WORLD, &env.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &env.world);
  return env;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(LaunchEnv env, Device device, ncclUniqueId id) : Communicator(std::move(env)), device_(device) {
    cudaSetDevice(device_.index);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // non-blocking: wait() polls for asynchronous errors
    check_nccl(ncclCommInitRankConfig(&comm_, world(), id, rank(), &config), "init", rank());
    MOE_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess &&
                  cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming) == cudaSuccess,
              "moe dist (nccl): cannot create a stream and an event on ", device_.str());
    wait("init");
  }
  ~NcclCommunicator() override {
    ncclCommDestroy(comm_);
    cudaEventDestroy(ready_);
    cudaStreamDestroy(stream_);
  }
  const char* backend() const override { return "nccl"; }
  std::unique_ptr<Communicator> dup() override {
    ncclUniqueId id;
    if (rank() == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    return std::make_unique<NcclCommunicator>(env_, device_, id);
  }

 protected:
  void do_all_reduce(const Tensor& t) override {
    check_device(t, "all_reduce");
    check_nccl(ncclAllReduce(t.raw(), t.raw(), static_cast<size_t>(t.numel()), nccl_type(t.dtype(), true), ncclSum,
                             comm_, stream()),
               "all_reduce", rank());
    wait("all_reduce");
  }
  void do_broadcast(const Tensor& t, int root) override {
    check_device(t, "broadcast");
    check_nccl(ncclBroadcast(t.raw(), t.raw(), t.bytes(), ncclUint8, root, comm_, stream()), "broadcast", rank());
    wait("broadcast");
  }
  void do_all_gather(const Tensor& in, const Tensor& out) override {
    check_device(in, "all_gather");
    check_device(out, "all_gather");
    check_nccl(ncclAllGather(in.raw(), out.raw(), in.bytes(), ncclUint8, comm_, stream()), "all_gather", rank());
    wait("all_gather");
  }
  void do_reduce_scatter(const Tensor& in, const Tensor& out) override {
    check_device(in, "reduce_scatter");
    check_device(out, "reduce_scatter");
    check_nccl(ncclReduceScatter(in.raw(), out.raw(), static_cast<size_t>(out.numel()), nccl_type(in.dtype(), true),
                                 ncclSum, comm_, stream()),
               "reduce_scatter", rank());
    wait("reduce_scatter");
  }
  void do_all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_rows, const Tensor& out,
                       const std::vector<int64_t>& recv_rows) override {
    check_device(in, "all_to_all_v");
    check_device(out, "all_to_all_v");
    const size_t row = static_cast<size_t>(row_elements("all_to_all_v", in)) * dtype_size(in.dtype());
    size_t s_off = 0, r_off = 0;
    const cudaStream_t st = stream();
    check_nccl(ncclGroupStart(), "all_to_all_v", rank());
    for (int r = 0; r < world(); ++r) {
      const size_t s = static_cast<size_t>(send_rows[static_cast<size_t>(r)]) * row;
      const size_t v = static_cast<size_t>(recv_rows[static_cast<size_t>(r)]) * row;
      if (s) check_nccl(ncclSend(static_cast<char*>(in.raw()) + s_off, s, ncclUint8, r, comm_, st), "send", rank());
      if (v) check_nccl(ncclRecv(static_cast<char*>(out.raw()) + r_off, v, ncclUint8, r, comm_, st), "recv", rank());
      s_off += s;
      r_off += v;
    }
    check_nccl(ncclGroupEnd(), "all_to_all_v", rank());
    wait("all_to_all_v");
  }
  void do_barrier() override {
    // An all-reduce of one value is NCCL's barrier.
    Tensor one = Tensor::zeros(Shape{1}, DType::f32, device_);
    do_all_reduce(one);
  }
  [[noreturn]] void abort_job(int code) override {
    ncclCommAbort(comm_);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  /// This communicator's stream, made to wait for everything queued so far on the compute stream.
  cudaStream_t stream() const {
    cudaEventRecord(ready_, cuda::stream(device_.index));
    cudaStreamWaitEvent(stream_, ready_, 0);
    return stream_;
  }
  void check_device(const Tensor& t, const char* op) const {
    MOE_CHECK(t.device() == device_, op, " (nccl): tensor on ", t.device(), ", this rank's communicator is on ",
              device_.str(), " (the mpi backend moves CPU tensors)");
  }
  /// Waits for the stream, polling NCCL's asynchronous error state (a failed peer) meanwhile.
  void wait(const char* op) {
    while (true) {
      ncclResult_t async = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(comm_, &async), op, rank());
      check_nccl(async, op, rank());
      if (async == ncclSuccess) {
        const cudaError_t e = cudaStreamQuery(stream_);
        if (e == cudaSuccess) return;
        MOE_CHECK(e == cudaErrorNotReady, "moe dist (nccl): ", op, " on rank ", rank(), ": ", cudaGetErrorString(e));
      }
      std::this_thread::yield();
    }
  }

  Device device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Device device) {
  LaunchEnv env = nccl_env();
  MOE_CHECK(device.is_cuda(), "--dist.backend nccl needs a CUDA device, not ", device.str());
  ncclUniqueId id;
  if (env.rank == 0) check_nccl(ncclGetUniqueId(&id), "get unique id", 0);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  return std::make_unique<NcclCommunicator>(env, device, id);
}

}  // namespace moe::dist

#else

namespace moe::dist {
std::unique_ptr<Communicator> make_nccl_communicator(Device device) {
  MOE_FAIL("moe dist: this build has no NCCL backend (needs a CUDA build with nccl.h, libnccl and MPI); asked for ",
           device.str());
}
}  // namespace moe::dist
#endif
