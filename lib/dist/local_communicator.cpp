// The "none" backend: one process, world 1. all_reduce, broadcast and barrier leave the tensors as
// they are; all_gather, reduce_scatter and all_to_all_v copy their input (what world 1 means).
// Covered by tests/dist/communicator_test.cpp (run without mpirun).
#include "common/error.h"
#include "dist/communicator.h"

namespace moe::dist {

namespace {

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator() : Communicator(LaunchEnv{}) {}
  const char* backend() const override { return "none"; }
  std::unique_ptr<Communicator> dup() override { return std::make_unique<LocalCommunicator>(); }

 protected:
  void do_all_reduce(const Tensor&) override {}
  void do_broadcast(const Tensor&, int) override {}
  void do_all_gather(const Tensor& in, const Tensor& out) override { copy(in, out); }
  void do_reduce_scatter(const Tensor& in, const Tensor& out) override { copy(in, out); }
  void do_all_to_all_v(const Tensor& in, const std::vector<int64_t>&, const Tensor& out,
                       const std::vector<int64_t>&) override {
    copy(in, out);
  }
  void do_barrier() override {}

 private:
  static void copy(const Tensor& in, const Tensor& out) {
    if (in.numel() > 0 && in.raw() != out.raw()) Tensor(out).copy_from(in);
  }
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() { return std::make_unique<LocalCommunicator>(); }

}  // namespace moe::dist
