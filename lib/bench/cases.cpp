// The table of moe-bench case families (cases.h), in run order: kernels first, then whole layers, then
// whole models.
// Covered by tests/bench/bench_test.cpp ("every case runs").
#include "bench/cases.h"

namespace moe::bench {

std::vector<Case> all_cases() {
  using Family = std::vector<Case> (*)();
  const Family families[] = {
      gemm_cases,      attention_cases, norm_cases,      optimizer_cases, grouped_gemm_cases,
      moe_layer_cases, moa_layer_cases, mae_layer_cases, model_cases,     dist_cases,
  };
  std::vector<Case> out;
  for (Family f : families)
    for (Case& c : f()) out.push_back(std::move(c));
  return out;
}

}  // namespace moe::bench
