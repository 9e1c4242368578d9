// CPU-vs-CUDA parity of the embedding lookup (f32 and bf16 tables, vector and scalar paths),
// an f32 table read into bf16 activations, and the out-of-range id flag.
#include <catch2/catch.hpp>

#include "graph/expr/embedding.h"
#include "ops/embedding.h"
#include "ops/index_errors.h"
#include "support/parity.h"

using namespace moe;

TEST_CASE("embedding parity", "[gpu][embedding]") {
  for (int64_t D : {64, 33}) {
    Tensor table = test::random_tensor(Shape{1000, D}, 1);
    std::vector<int32_t> v(4 * 37);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((i * 7919) % 1000 % (i % 5 ? 1000 : 3));
    Tensor ids = Tensor::from_vector(v, Shape{4, 37});
    for (DType dt : {DType::f32, DType::bf16}) {
      INFO("D " << D << " " << dtype_name(dt));
      auto r = test::parity({table, ids},
                            [](Graph&, const std::vector<Expr>& in) { return embedding(in[0], in[1], 8.f); }, dt, {0});
      CHECK(r.forward < (dt == DType::f32 ? 1e-6 : 1e-2));
      CHECK(r.backward < (dt == DType::f32 ? 1e-6 : 2e-2));
    }
  }
}

TEST_CASE("embedding: f32 table, bf16 output on the GPU", "[gpu][embedding]") {
  const Device gpu = Device::cuda(0);
  Tensor table = test::random_tensor(Shape{100, 48}, 2, -1, 1, DType::f32);
  Tensor ids = Tensor::from_vector(std::vector<int32_t>{5, 99, 0, 5, 5}, Shape{5});
  Tensor yc = Tensor::empty(Shape{5, 48}, DType::f32, Device::cpu());
  embedding_forward(table, ids, yc, 2.f);
  Tensor yg = Tensor::empty(Shape{5, 48}, DType::bf16, gpu);
  embedding_forward(table.to(gpu), ids.to(gpu), yg, 2.f);
  CHECK(test::rel_error(yg.to_vector<double>(), yc.to_vector<double>()) < 1e-2);
  Tensor dout = test::random_tensor(Shape{5, 48}, 3, -1, 1, DType::f32);
  Tensor dc = Tensor::zeros(Shape{100, 48}, DType::f32, Device::cpu()),
         dg = Tensor::zeros(Shape{100, 48}, DType::f32, gpu);
  embedding_backward(ids, dout, dc, 2.f);
  embedding_backward(ids.to(gpu), Tensor::from_vector(dout.to_vector<double>(), dout.shape(), gpu, DType::bf16), dg,
                     2.f);
  CHECK(test::rel_error(dg.to_vector<double>(), dc.to_vector<double>()) < 1e-2);
}

TEST_CASE("embedding: out-of-range ids on the GPU are reported", "[gpu][embedding]") {
  const Device gpu = Device::cuda(0);
  check_index_errors(gpu);
  Tensor table = Tensor::zeros(Shape{10, 4}, DType::f32, gpu);
  Tensor out = Tensor::empty(Shape{2, 4}, DType::f32, gpu);
  embedding_forward(table, Tensor::from_vector(std::vector<int32_t>{3, 12}, Shape{2}, gpu), out);
  CHECK_THROWS_WITH(check_index_errors(gpu),
                    Catch::Contains("embedding") && Catch::Contains("index 12") && Catch::Contains("[0, 10)"));
  CHECK_NOTHROW(check_index_errors(gpu));
}

TEST_CASE("embedding: GPU backward is deterministic", "[gpu][embedding]") {
  const Device gpu = Device::cuda(0);
  std::vector<int32_t> v(20000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 3 ? static_cast<int32_t>(i * 31 % 500) : 0;  // a frequent "pad" id
  Tensor ids = Tensor::from_vector(v, Shape{20000}, gpu);
  Tensor dout = test::random_tensor(Shape{20000, 36}, 4, -1, 1, DType::f32, gpu);
  Tensor a = Tensor::zeros(Shape{500, 36}, DType::f32, gpu), b = Tensor::zeros(Shape{500, 36}, DType::f32, gpu);
  embedding_backward(ids, dout, a, 0.5f);
  embedding_backward(ids, dout, b, 0.5f);
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  Tensor c = Tensor::zeros(Shape{500, 36}, DType::f32, Device::cpu());
  embedding_backward(ids.to(Device::cpu()), dout.to(Device::cpu()), c, 0.5f);
  CHECK(test::rel_error(a.to_vector<double>(), c.to_vector<double>()) < 1e-6);
}
