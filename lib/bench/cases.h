// The moe-bench cases: each is a name (matched by --filter), a one-line description (--list) and a
// small function that builds random inputs at the context's scale, times its kernels and emits rows.
// Families live in one file each (gemm_cases.cpp, attention_cases.cpp, ...); all_cases() in cases.cpp
// is the table of families. Layer-level cases (a whole layer, forward + backward, through a training
// graph) are the "layer." family: add a new one (e.g. MAE) as a file with a *_layer_cases() function
// and one line in the table (layer_step.h has the shared MHA baseline). Whole-model training updates are
// the "model." family (model_cases.cpp, timed through model_step.h). Covered by tests/bench/bench_test.cpp.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "bench/context.h"
#include "dist/communicator.h"

namespace moe::bench {

struct Case {
  std::string name;  // e.g. "gemm.ffn_up", "layer.moe_ffn"
  std::string what;  // one line for --list
  std::function<void(BenchContext&)> run;
};

std::vector<Case> gemm_cases();          // gemm_cases.cpp: matmul op vs cuBLASLt / BLAS
std::vector<Case> attention_cases();     // attention_cases.cpp: fused attention fwd, bwd, fwd+bwd
std::vector<Case> norm_cases();          // norm_cases.cpp: layer norm, softmax, softmax-cross-entropy
std::vector<Case> dist_cases();          // dist_cases.cpp: collectives, a data-parallel update
std::vector<Case> optimizer_cases();     // optimizer_cases.cpp: Adam
std::vector<Case> grouped_gemm_cases();  // grouped_gemm_cases.cpp: the MoE expert GEMMs vs one dense GEMM
std::vector<Case> moe_layer_cases();     // moe_layer_cases.cpp: layer.moe_ffn vs a dense FFN
std::vector<Case> moa_layer_cases();     // moa_layer_cases.cpp: layer.moa vs multi-head attention
std::vector<Case> mae_layer_cases();     // mae_layer_cases.cpp: layer.mae (G and F passes) vs multi-head attention
std::vector<Case> model_cases();         // model_cases.cpp: whole-model training updates (model.*)
/// model.transformer_base's update, data-parallel over `comm` (the dist.update case; model_cases.cpp).
void data_parallel_update_case(BenchContext& ctx, dist::Communicator& comm);

/// Every case, in run order.
std::vector<Case> all_cases();

}  // namespace moe::bench
