// moe-bench (lib/bench/, apps/moe_bench.cpp) on the CPU: the timing statistics, random inputs, the
// reference GEMM, every case at tiny shapes (rows with positive finite times and rates, the stated
// FLOP and byte formulas, ratios naming a row of their case, tokens/s of the whole-model rows), the
// model FLOP formula, the text and JSON outputs, option errors, and the binary's --help, --list and a
// filtered run.
#include "bench/bench.h"

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "bench/cases.h"
#include "bench/model_step.h"
#include "bench/random.h"
#include "bench/reference_gemm.h"
#include "bench/timer.h"
#include "common/openblas_core.h"
#include "ops/attention.h"
#include "ops/cpu_gemm.h"

using namespace moe;
using namespace moe::bench;

namespace {
BenchOptions tiny_options() {
  BenchOptions o = default_options(Device::cpu());
  o.scale = Scale::tiny;
  o.repeat = 3;
  o.warmup = 1;
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}
}  // namespace

TEST_CASE("bench: timing statistics", "[bench]") {
  const Timing odd = summarize({3.0, 1.0, 2.0});
  CHECK(odd.median_ms == 2.0);
  CHECK(odd.min_ms == 1.0);
  CHECK(odd.max_ms == 3.0);
  CHECK(odd.calls == 3);
  CHECK(summarize({4.0, 1.0, 2.0, 3.0}).median_ms == 2.5);
  CHECK_THROWS_WITH(summarize({}), Catch::Contains("no timed calls"));
  int calls = 0, before = 0;
  const Timing t = time_calls(
      Device::cpu(), 2, 5, [&] { ++calls; }, [&] { ++before; });
  CHECK(calls == 7);
  CHECK(before == 5);
  CHECK(t.calls == 5);
  CHECK(t.min_ms >= 0);
  CHECK_THROWS_WITH(time_calls(Device::cpu(), 0, 0, [] {}), Catch::Contains("repeat 0"));
}

TEST_CASE("bench: random inputs are spread over their range, tiled beyond one block", "[bench]") {
  const Tensor small = random_tensor(Shape{1000}, DType::f32, Device::cpu(), 7, -2, 3);
  const std::vector<float> v = small.to_vector<float>();
  std::set<float> distinct(v.begin(), v.end());
  CHECK(distinct.size() > 900);
  double mean = 0;
  for (float x : v) {
    CHECK(x >= -2.f);
    CHECK(x < 3.f);
    mean += x / 1000.0;
  }
  CHECK(mean == Approx(0.5).margin(0.2));
  CHECK(random_tensor(Shape{1000}, DType::f32, Device::cpu(), 8).to_vector<float>() != v);  // seeds differ
  const int64_t block = (int64_t{1} << 22) + 13;
  const Tensor big = random_tensor(Shape{block + 5}, DType::f32, Device::cpu(), 9);
  const std::vector<float> b = big.to_vector<float>();
  for (int i = 0; i < 5; ++i) CHECK(b[size_t(block + i)] == b[size_t(i)]);  // the tail repeats the block
  CHECK(b[0] != b[1]);
  const std::vector<int32_t> c = random_classes(Shape{500}, 7, Device::cpu(), 3).to_vector<int32_t>();
  std::set<int32_t> classes(c.begin(), c.end());
  CHECK(classes.size() == 7);
  CHECK(*classes.begin() == 0);
  CHECK(*classes.rbegin() == 6);
  CHECK_THROWS_WITH(random_tensor(Shape{2}, DType::i32, Device::cpu(), 1), Catch::Contains("not floating"));
}

TEST_CASE("bench: the reference GEMM", "[bench]") {
  const Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor b = Tensor::from_vector(std::vector<float>{1, 0, 0, 1, 2, -1}, Shape{3, 2});
  const Tensor c = Tensor::zeros(Shape{2, 2}, DType::f32, Device::cpu());
  reference_gemm(a, b, c)();
  CHECK(c.to_vector<float>() == std::vector<float>{7, -1, 16, -1});
  CHECK_THROWS_WITH(reference_gemm(a, a, c), Catch::Contains("reference_gemm") && Catch::Contains("[2,3]"));
  CHECK(std::string(reference_gemm_library(Device::cpu())) == "blas");
}

TEST_CASE("bench: every case runs on the CPU at tiny shapes", "[bench]") {
  std::ostringstream out;
  const BenchReport r = run_bench(tiny_options(), out);
  CHECK(r.failures.empty());
  REQUIRE(r.ceilings.tflops > 0);
  REQUIRE(r.ceilings.gbps > 0);
  CHECK(std::isfinite(r.ceilings.tflops));
  CHECK(std::isfinite(r.ceilings.gbps));
  std::map<std::string, std::vector<Row>> by_case;
  for (const Row& row : r.rows) by_case[row.case_name].push_back(row);
  for (const Case& c : all_cases()) CHECK(by_case.count(c.name));  // every case produced rows
  CHECK(by_case["ceiling"].size() == 2);
  for (const Row& row : r.rows) {
    INFO(row.name());
    CHECK(std::isfinite(row.timing.median_ms));
    CHECK(row.timing.median_ms > 0);
    CHECK(row.timing.min_ms <= row.timing.median_ms);
    CHECK(row.timing.median_ms <= row.timing.max_ms);
    CHECK(row.timing.calls == 3);
    CHECK((row.flops > 0) != (row.bytes > 0));  // compute- or memory-bound, never both
    const double rate = row.flops > 0 ? row.tflops() : row.gbps();
    CHECK(std::isfinite(rate));
    CHECK(rate > 0);
    const double frac = r.ceilings.fraction(row);
    CHECK(std::isfinite(frac));
    CHECK(frac > 0);
    CHECK(!row.shape.empty());
    CHECK(row.dtype == "f32");
    const bool model = row.case_name.rfind("model.", 0) == 0 || row.case_name == "dist.update";
    CHECK((row.tokens > 0) == model);  // whole-model rows, and only they, carry tokens and tokens/s
    if (model) {
      CHECK(row.flops > 0);
      CHECK(row.tokens_per_s() == Approx(row.tokens / (row.timing.median_ms * 1e-3)));
      CHECK(row.note.find("params") != std::string::npos);
      CHECK(out.str().find("tokens/s; ") != std::string::npos);
    }
    if (row.ratio > 0) {  // the baseline is a row of the same case, and the ratio is the time ratio
      bool found = false;
      for (const Row& o : by_case[row.case_name])
        if (o.label == row.baseline) {
          found = true;
          CHECK(row.ratio == Approx(row.timing.median_ms / o.timing.median_ms));
        }
      CHECK(found);
    }
    CHECK(out.str().find(row.name()) != std::string::npos);
  }
  // The FLOP and byte formulas of the file comments, at the tiny shapes.
  auto find = [&](const std::string& name) {
    for (const Row& row : r.rows)
      if (row.name() == name) return row;
    FAIL("no row " << name);
    return Row{};
  };
  CHECK(find("gemm.ffn_up/matmul").flops == 2.0 * 64 * 32 * 128);
  {  // matmul against a direct BLAS call: equal up to the summation order of the CPU GEMM backend (oneDNN here)
    const std::string note = find("gemm.ffn_up/matmul").note, prefix = "max rel diff vs blas ";
    REQUIRE(note.rfind(prefix, 0) == 0);
    CHECK(std::stod(note.substr(prefix.size())) < 1e-5);
  }
  CHECK(find("attention.base_causal/fwd").flops == attention_flops(2, 2, 16, 16, 8, true, false));
  CHECK(find("attention.base/fwd+bwd").flops == 7 * 2.0 * 2 * 2 * 16 * 16 * 8);
  CHECK(find("layer_norm/fwd").bytes == 2.0 * 64 * 32 * 4 + 2 * 32 * 4 + 2 * 64 * 4);
  CHECK(find("softmax/bwd").bytes == 3.0 * 16 * 100 * 4);
  CHECK(find("cross_entropy/fwd").bytes == 16.0 * 100 * 4 + 4 * 16 + 2 * 16 * 4);
  CHECK(find("adam/step").bytes == 28.0 * 1000);
  CHECK(find("grouped_gemm.e8/up.bwd").flops == 4.0 * 64 * 16 * 32);
  CHECK(find("layer.moe_ffn/dense_ffn.h64").flops == 12.0 * 32 * 16 * 64);
  CHECK(find("layer.moe_ffn/moe.e8.k2.h32").flops == 12.0 * 32 * 2 * 16 * 32 + 12.0 * 32 * 16 * 8);
  CHECK(find("layer.moa/moa.8K8E8D").baseline == "mha.h8");
  // model.*: 2 rows of 8 tokens per side, d 16, FFN 32, vocabulary 64, 2 heads of 8, 1 (+ 1) layers.
  const double ffn = 2.0 * 16 * 32, moe_ffn = 2 * 2.0 * 16 * 32 + 2.0 * 16 * 8, attn = 7 * 2.0 * 2 * 2 * 8;
  const double enc = 16 * (4.0 * 16 * 16), dec = 16 * (4.0 * 16 * 16) + 16 * 2.0 * 16 * 16 * 2,
               out_proj = 16.0 * 16 * 64;
  const double pairs = 64 + 36 + 64;  // encoder self, decoder causal self, cross
  CHECK(find("model.transformer_base/update").flops == 6 * (enc + dec + 32 * ffn + out_proj) + attn * pairs);
  CHECK(find("model.transformer_base_moe/update").flops == 6 * (enc + dec + 32 * moe_ffn + out_proj) + attn * pairs);
  CHECK(find("model.transformer_lm/update").flops == 6 * (enc + 16 * ffn + out_proj) + attn * 36);
  for (const char* name : {"model.transformer_base/update", "model.transformer_base_moe/update"}) {
    CHECK(find(name).tokens == 16);  // y </s>: 2 x 8 target tokens
    CHECK(find(name).shape == "2x8 -> 2x8");
  }
  CHECK(find("model.transformer_lm/update").tokens == 16);
  CHECK(find("ceiling/copy").bytes == 2.0 * (1 << 20));
  CHECK(r.ceilings.fraction(find("ceiling/copy")) == Approx(1.0));
  CHECK(out.str().find("# ceilings measured in this run") != std::string::npos);
}

TEST_CASE("bench: JSON lines and the filter", "[bench]") {
  BenchOptions o = tiny_options();
  o.format = "json";
  o.filter = "^(adam|softmax)$";
  const std::string path = (std::filesystem::temp_directory_path() / "moe_bench_test.jsonl").string();
  std::filesystem::remove(path);
  o.json_path = path;
  std::ostringstream out;
  const BenchReport r = run_bench(o, out);
  REQUIRE(r.rows.size() == 5);  // two ceilings, adam/step, softmax fwd and bwd
  const std::vector<std::string> lines = lines_of(out.str());
  REQUIRE(lines.size() == 5);
  CHECK(lines == lines_of(read_file(path)));
  std::set<std::string> names;
  for (const std::string& line : lines) {
    const YAML::Node n = YAML::Load(line);
    names.insert(n["name"].as<std::string>());
    CHECK(n["median_ms"].as<double>() > 0);
    CHECK(n["device"].as<std::string>() == "cpu");
    CHECK((n["tflops"] || n["gbps"]));
    CHECK(n["ceiling_fraction"].as<double>() > 0);
  }
  CHECK(names == std::set<std::string>{"ceiling/copy", "ceiling/gemm.blas", "adam/step", "softmax/fwd", "softmax/bwd"});
  std::filesystem::remove(path);

  o = tiny_options();
  o.ceilings = false;
  o.filter = "no_such_case";
  std::ostringstream none;
  CHECK(run_bench(o, none).rows.empty());
}

TEST_CASE("bench: the model FLOP formula", "[bench]") {
  // Transformer base at 256 x 64: the GEMMs are 6 x tokens x the weights each token passes through.
  const ModelShape base{.batch = 256,
                        .src_len = 64,
                        .tgt_len = 64,
                        .d = 512,
                        .ffn = 2048,
                        .vocab = 32000,
                        .heads = 8,
                        .enc_layers = 6,
                        .dec_layers = 6};
  const double n = 256.0 * 64, d = 512, f = 2048;
  const double gemm = 6 * n * (6 * (4 * d * d + 2 * d * f) + 6 * (8 * d * d + 2 * d * f) + d * 32000);
  const double attention =
      6 * (2 * attention_flops(256, 8, 64, 64, 64, false, false) + attention_flops(256, 8, 64, 64, 64, true, false)) *
      3.5;
  CHECK(model_train_flops(base) == Approx(gemm + attention).epsilon(1e-12));
  // A decoder-only LM has no encoder and no cross-attention; MoE FFNs count k experts and the two gate maps.
  const ModelShape lm{.batch = 32, .tgt_len = 256, .d = 512, .ffn = 2048, .vocab = 32489, .heads = 8, .dec_layers = 6};
  const double lm_gemm = 6 * 8192.0 * (6 * (4 * d * d + 2 * d * f) + d * 32489);
  CHECK(model_train_flops(lm) == Approx(lm_gemm + 6 * 3.5 * attention_flops(32, 8, 256, 256, 64, true, false)));
  ModelShape moe = base;
  moe.experts = 8;
  moe.k = 2;
  CHECK(model_train_flops(moe) - model_train_flops(base) ==
        Approx(6 * n * 12 * (2 * 2 * d * f + 2 * d * 8 - 2 * d * f)));
}

TEST_CASE("bench: model rows print tokens/s in the note and the JSON", "[bench]") {
  BenchOptions o = tiny_options();
  o.filter = "^model\\.transformer_lm$";
  o.ceilings = false;
  std::ostringstream text;
  const BenchReport r = run_bench(o, text);
  REQUIRE(r.rows.size() == 1);
  const Row& row = r.rows[0];
  CHECK(row.name() == "model.transformer_lm/update");
  CHECK(row.tokens_per_s() > 0);
  CHECK(text.str().find(" tokens/s; ") != std::string::npos);
  o.format = "json";
  std::ostringstream json;
  REQUIRE(run_bench(o, json).rows.size() == 1);
  const YAML::Node n = YAML::Load(lines_of(json.str()).at(0));
  CHECK(n["tokens"].as<double>() == 16);
  CHECK(n["tokens_per_s"].as<double>() == Approx(16 / (n["median_ms"].as<double>() * 1e-3)));
  CHECK(n["tflops"].as<double>() > 0);
}

TEST_CASE("bench: option errors name the option", "[bench]") {
  std::ostringstream out;
  BenchOptions o = tiny_options();
  o.filter = "(";
  CHECK_THROWS_WITH(run_bench(o, out), Catch::Contains("--filter '('"));
  o = tiny_options();
  o.dtype = DType::bf16;
  CHECK_THROWS_WITH(run_bench(o, out), Catch::Contains("--dtype bf16") && Catch::Contains("CPU"));
  o = tiny_options();
  o.repeat = 0;
  CHECK_THROWS_WITH(run_bench(o, out), Catch::Contains("--repeat 0"));
  o = tiny_options();
  o.format = "csv";
  CHECK_THROWS_WITH(run_bench(o, out), Catch::Contains("--format 'csv'"));
  if (!has_gpu()) {
    o = default_options(Device::cuda(0));
    CHECK_THROWS_WITH(run_bench(o, out), Catch::Contains("--device cuda:0"));
  }
  CHECK_THROWS_WITH(scale_from_name("huge"), Catch::Contains("scale 'huge'"));
  CHECK(default_options(Device::cpu()).dtype == DType::f32);
  CHECK(default_options(Device::cuda(0)).dtype == DType::bf16);
  CHECK(default_options(Device::cuda(0)).scale == Scale::full);
}

TEST_CASE("the moe-bench binary", "[bench][cli]") {
  const std::string bin = std::string(MOE_BIN_DIR) + "/moe-bench";
  if (!std::filesystem::exists(bin)) {
    WARN("moe-bench not built at " << bin << ": skipping the binary checks");
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() / "moe_bench_cli_test";
  std::filesystem::create_directories(dir);
  const std::string help = (dir / "help.txt").string(), run = (dir / "run.txt").string();
  REQUIRE(std::system((bin + " --help > " + help).c_str()) == 0);
  for (const char* opt : {"--device", "--filter", "--repeat", "--warmup", "--format", "--scale", "--list"})
    CHECK(read_file(help).find(opt) != std::string::npos);
  REQUIRE(std::system((bin + " --list > " + help).c_str()) == 0);
  for (const Case& c : all_cases()) CHECK(read_file(help).find(c.name) != std::string::npos);
  REQUIRE(std::system(
              (bin + " --device cpu --scale tiny --filter '^adam$' --repeat 2 --format json > " + run).c_str()) == 0);
  const std::vector<std::string> lines = lines_of(read_file(run));
  REQUIRE(lines.size() == 3);
  CHECK(YAML::Load(lines[2])["name"].as<std::string>() == "adam/step");
  // --cpu-info: what ran; a moe program runs OpenBLAS's AVX2 or AVX-512 kernels wherever the CPU has them, also where
  // OpenBLAS 0.3.21 does not know the CPU (common/openblas_core.h: the program reruns itself with OPENBLAS_CORETYPE)
  REQUIRE(std::system(("env -u OPENBLAS_CORETYPE " + bin + " --cpu-info > " + run).c_str()) == 0);
  const YAML::Node info = YAML::Load(read_file(run));
  CHECK(info["cpu"].as<std::string>() == cpu_compute_info().cpu);
  CHECK(info["kernels"].as<std::string>() == enum_name(cpu_isa()));
  CHECK(info["gemm"].as<std::string>() == enum_name(cpu_gemm_backend()));
  const std::string core = info["openblas"].as<std::string>();
  CHECK_FALSE(core.empty());
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  INFO("OpenBLAS kernels " << core << ", OPENBLAS_CORETYPE " << info["openblas_coretype"].as<std::string>());
  CHECK(openblas_core_override(core, avx512, avx2).empty());
  // OpenBLAS starts no pool of its own (the rerun sets OPENBLAS_NUM_THREADS=1: its idle workers would spin at load),
  // also when the user's OMP_NUM_THREADS, which OpenBLAS reads otherwise, asks for more. (OpenBLAS starts at most
  // one thread per CPU, so one CPU could not tell.)
  if (std::thread::hardware_concurrency() < 2) {
    WARN("one CPU: OpenBLAS's thread pool is not checked");
  } else {
    REQUIRE(std::system(("env -u OPENBLAS_NUM_THREADS OMP_NUM_THREADS=4 " + bin + " --cpu-info > " + run).c_str()) ==
            0);
    CHECK(YAML::Load(read_file(run))["threads"].as<int>() == 1);
    REQUIRE(std::system(("env OPENBLAS_NUM_THREADS=4 " + bin + " --cpu-info > " + run).c_str()) == 0);
    CHECK(YAML::Load(read_file(run))["threads"].as<int>() > 1);  // the user's choice is left alone
  }
  // The rerun on a CPU OpenBLAS does not know, on any CPU: a preloaded openblas_get_corename answers "Prescott"
  // unless OPENBLAS_CORETYPE names a set (as OpenBLAS 0.3.21 does on a recent Xeon).
  const std::string shim = (dir / "prescott.c").string(), so = (dir / "prescott.so").string();
  std::ofstream(shim)
      << "#include <stdlib.h>\nconst char* openblas_get_corename(void) {\n"
         "  const char* forced = getenv(\"OPENBLAS_CORETYPE\");\n  return forced ? forced : \"Prescott\";\n}\n";
  if (std::system(("cc -shared -fPIC -o " + so + " " + shim + " 2>/dev/null").c_str()) != 0) {
    WARN("no C compiler here: the rerun under a Prescott OpenBLAS is not checked");
  } else {
    REQUIRE(std::system(("env -u OPENBLAS_CORETYPE LD_PRELOAD=" + so + " " + bin + " --cpu-info > " + run).c_str()) ==
            0);
    const YAML::Node forced = YAML::Load(read_file(run));
    const std::string want = avx512 ? "SkylakeX" : avx2 ? "Haswell" : "";
    CHECK(forced["openblas_coretype"].as<std::string>() == want);
    CHECK(forced["openblas"].as<std::string>() == (want.empty() ? "Prescott" : want));
  }
  CHECK(std::system((bin + " --format csv > /dev/null 2>&1").c_str()) != 0);
  CHECK(std::system((bin + " --device cpu --dtype bf16 --scale tiny > /dev/null 2>&1").c_str()) != 0);
  std::filesystem::remove_all(dir);
}
