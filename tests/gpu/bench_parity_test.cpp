// moe-bench on a GPU (run by scripts/bench-gpu.sh before the full benchmark): the cuBLASLt reference
// GEMM against the CPU (f32, bf16; odd and aligned shapes), the CUDA-event timer, and every case at tiny
// shapes in bf16 (rows with positive finite times; the GEMM rows agree with cuBLASLt; model rows have tokens/s).
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <sstream>

#include "bench/bench.h"
#include "bench/cases.h"
#include "bench/reference_gemm.h"
#include "support/parity.h"
#include "tensor/cuda_runtime.h"

using namespace moe;

TEST_CASE("reference GEMM parity", "[gpu][bench]") {
  const Shape shapes[][2] = {{{64, 128}, {128, 96}}, {{37, 70}, {70, 46}}, {{1, 8}, {8, 1}}, {{256, 512}, {512, 200}}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    const Tensor a = test::random_tensor(s[0], seed++), b = test::random_tensor(s[1], seed++);
    const Shape cs{s[0][0], s[1][1]};
    const Tensor ref = Tensor::zeros(cs, DType::f64, Device::cpu());
    reference_gemm(a, b, ref)();  // f64 on the CPU
    for (DType dt : {DType::f32, DType::bf16}) {
      INFO(s[0] << " @ " << s[1] << " " << dtype_name(dt));
      const Device gpu = Device::cuda(0);
      const Tensor ga = Tensor::from_vector(a.to_vector<float>(), s[0], gpu, dt);
      const Tensor gb = Tensor::from_vector(b.to_vector<float>(), s[1], gpu, dt);
      const Tensor gc = Tensor::empty(cs, dt, gpu);
      const auto gemm = reference_gemm(ga, gb, gc);
      gemm();
      gemm();  // a second call overwrites (beta = 0)
      CHECK(test::rel_error(gc.to_vector<double>(), ref.to_vector<double>()) < (dt == DType::f32 ? 1e-5 : 2e-2));
    }
  }
  CHECK(std::string(reference_gemm_library(Device::cuda(0))) == "cublasLt");
}

TEST_CASE("CUDA-event timer", "[gpu][bench]") {
  Tensor big = Tensor::zeros(Shape{int64_t{64} << 20}, DType::f32, Device::cuda(0));
  int before = 0, calls = 0;
  const std::vector<float> ms = cuda::time_calls_on_device_ms(
      0, 4, [&] { ++calls, big.zero_(); }, [&] { ++before; });
  REQUIRE(ms.size() == 4);
  CHECK(calls == 4);
  CHECK(before == 4);
  for (float t : ms) {
    CHECK(std::isfinite(t));
    CHECK(t > 0);  // a 256 MiB memset takes well over the events' resolution
  }
  CHECK_THROWS_WITH(cuda::time_calls_on_device_ms(0, 0, [] {}), Catch::Contains("calls = 0"));
}

TEST_CASE("moe-bench runs every case on the GPU at tiny shapes", "[gpu][bench]") {
  bench::BenchOptions o = bench::default_options(Device::cuda(0));
  o.scale = bench::Scale::tiny;
  o.repeat = 3;
  o.warmup = 1;
  std::ostringstream out;
  const bench::BenchReport r = bench::run_bench(o, out);
  INFO(out.str());
  for (const std::string& f : r.failures) FAIL_CHECK(f);
  std::map<std::string, int> rows;
  for (const bench::Row& row : r.rows) {
    ++rows[row.case_name];
    INFO(row.name());
    CHECK(std::isfinite(row.timing.median_ms));
    CHECK(row.timing.median_ms > 0);
    CHECK(row.timing.calls == 3);
    CHECK((row.dtype == "bf16" || row.dtype == "f32"));
    if (row.case_name.rfind("model.", 0) == 0) CHECK(row.tokens_per_s() > 0);  // whole-model training updates
    if (row.label == "matmul") {  // "max rel diff vs cublasLt X": the op and cuBLASLt agree
      const size_t at = row.note.find("vs cublasLt ");
      REQUIRE(at != std::string::npos);
      CHECK(std::stod(row.note.substr(at + 12)) < 2e-2);
    }
  }
  for (const bench::Case& c : bench::all_cases()) CHECK(rows.count(c.name));
  CHECK(r.ceilings.tflops > 0);
  CHECK(r.ceilings.gbps > 0);
}
