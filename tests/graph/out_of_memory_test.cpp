// An allocation that fails inside a graph names the node: op, shape, dtype and size, and the allocator's
// figures (the request, in use, reserved, peak). The CPU allocator's cap provokes it.
#include <catch2/catch.hpp>
#include <string>

#include "common/error.h"
#include "graph/expr/binary.h"
#include "graph/graph.h"
#include "tensor/allocator.h"

using namespace moe;

TEST_CASE("graph: out of memory names the op and its output", "[graph][memory]") {
  Allocator& cpu = allocator_for(Device::cpu());
  Graph g(Device::cpu(), nullptr, GraphOptions{.training = false});
  const Expr a = g.input(Tensor::zeros(Shape{8192, 1}, DType::f32, Device::cpu()));
  const Expr b = g.input(Tensor::zeros(Shape{1, 8192}, DType::f32, Device::cpu()));
  cpu.release_cache();
  cpu.set_limit(cpu.stats().reserved + (size_t(1) << 20));  // 1 MiB more than is reserved now
  std::string message;
  try {
    add(a, b);  // a 256 MiB output (broadcast), larger than any free block
  } catch (const OutOfMemory& e) {
    message = e.what();
  }
  cpu.set_limit(0);
  INFO(message);
  CHECK(message.find("computing the value of op 'add' ([8192,8192] f32, 256.00 MiB)") != std::string::npos);
  CHECK(message.find("a request for 256.00 MiB failed with") != std::string::npos);
  CHECK(message.find("in use by tensors") != std::string::npos);
  CHECK(message.find("(peak ") != std::string::npos);
}
