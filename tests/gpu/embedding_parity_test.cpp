// CPU-vs-CUDA parity of the embedding lookup (f32, bf16 and f16 tables, vector and scalar paths),
// every pair of table and activation dtypes (e.g. an f32 table read into bf16 activations) forward
// and backward, and the out-of-range id flag.
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
    for (DType dt : test::kFloatTypes) {
      INFO("D " << D << " " << dtype_name(dt));
      auto r = test::parity({table, ids},
                            [](Graph&, const std::vector<Expr>& in) { return embedding(in[0], in[1], 8.f); }, dt, {0});
      CHECK(r.forward < test::bar(dt, 1e-6, 1e-2));
      CHECK(r.backward < test::bar(dt, 1e-6, 2e-2));
    }
  }
}

TEST_CASE("embedding: every pair of table and output dtypes on the GPU", "[gpu][embedding]") {
  // The table (e.g. f32 masters) and the activations may differ in dtype. The CPU reference reads the
  // same rounded table and output gradient in f32; D = 48 takes the 4-element packs, D = 33 single
  // elements. Forward: one rounding to the output dtype; backward: one rounding to the table's.
  const Device gpu = Device::cuda(0);
  const Tensor ids = Tensor::from_vector(std::vector<int32_t>{5, 99, 0, 5, 5, 42, 99}, Shape{7});
  for (int64_t D : {48, 33}) {
    const Shape ts{100, D}, ys{7, D};
    const std::vector<double> table = test::random_tensor(ts, 2).to_vector<double>();
    const std::vector<double> dout = test::random_tensor(ys, 3).to_vector<double>();
    for (DType tt : test::kFloatTypes)
      for (DType to : test::kFloatTypes) {
        INFO("D " << D << " table " << dtype_name(tt) << " output " << dtype_name(to));
        const std::vector<double> t_r = test::rounded_to(table, ts, tt), dy_r = test::rounded_to(dout, ys, to);
        Tensor yc = Tensor::empty(ys, DType::f32, Device::cpu()), yg = Tensor::empty(ys, to, gpu);
        embedding_forward(Tensor::from_vector(t_r, ts, Device::cpu(), DType::f32), ids, yc, 2.f);
        embedding_forward(Tensor::from_vector(t_r, ts, gpu, tt), ids.to(gpu), yg, 2.f);
        CHECK(test::rel_error(yg.to_vector<double>(), yc.to_vector<double>()) < test::bar(to, 1e-6, 1e-2));
        Tensor dc = Tensor::zeros(ts, DType::f32, Device::cpu()), dg = Tensor::zeros(ts, tt, gpu);
        embedding_backward(ids, Tensor::from_vector(dy_r, ys, Device::cpu(), DType::f32), dc, 2.f);
        embedding_backward(ids.to(gpu), Tensor::from_vector(dy_r, ys, gpu, to), dg, 2.f);
        CHECK(test::rel_error(dg.to_vector<double>(), dc.to_vector<double>()) < test::bar(tt, 1e-6, 1e-2));
      }
  }
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
