// int8 inference of a whole model on the CPU (moe-translate / moe-score --quantize int8, moe-average
// --quantize int8): which parameters are quantized and how (ops/int8_gemm.h), and pre-quantized checkpoints.
// Quantized: every dense weight ([in, out]) and every expert weight ([E, in, out]) per output column; the
// embedding tables ("embed.*", and an untied "out.w") per row, for the output layer that multiplies by them
// transposed, and their f32 values become q * scale, so the embedding lookups (which read f32) see the
// quantized table as CTranslate2's int8 models do. Kept in f32: gates and routers (a name component
// starting with "gate" or "router": small, and a routing decision flips on small errors), biases, norms,
// state. A pre-quantized checkpoint stores each quantized weight W as "W.int8" (u8 tensor holding the int8
// bytes, W's shape) and "W.int8_scale" (f32 [N] or [E, N] per column, [rows] for a table) and its metadata
// says "moe.quantize: int8": about a quarter of the f32 file, and it translates exactly as quantizing on
// load does. Covered by tests/training/checkpoint_test.cpp ("int8: ...") and tests/scripts/e2e_translation.sh
// (BLEU, identical output, file size).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "common/named_enum.h"
#include "graph/parameters.h"
#include "ops/int8_gemm.h"

namespace moe {

MOE_NAMED_ENUM(Quantize, none, int8)
enum class Int8Role { keep_f32, per_column, per_row };

/// How parameter `e` is quantized (the rules above).
Int8Role int8_role(const ParamEntry& e);
/// Whether a 2-D weight named `name` is an embedding table (quantized per row).
bool is_int8_table(const std::string& name);

/// Suffixes of a pre-quantized weight's two tensors.
inline const std::string kInt8Suffix = ".int8", kInt8ScaleSuffix = ".int8_scale";

/// The weight stored under `name` (= W + kInt8Suffix) with its scales (per row for a table); errors name the file.
std::pair<std::string, Int8Matrix> read_int8_weight(const std::string& path, const std::string& name,
                                                    const Tensor& bytes, const Tensor& scale);
/// The two tensors of a pre-quantized weight W.
void append_int8_weight(std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& name,
                        const Int8Matrix& m);

/// The quantized weights of a model: those the checkpoint carried pre-quantized (by name), the others
/// quantized from the f32 parameters now; the tables' values in `params` become q * scale (see above).
std::unique_ptr<Int8Weights> quantize_model(ParameterStore& params,
                                            const std::map<std::string, Int8Matrix>& prequantized);

}  // namespace moe
