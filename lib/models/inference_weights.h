// The weights of a checkpoint's CPU inference (moe-translate, moe-score): int8 (models/int8_model.h) when asked
// for or pre-quantized, else, where oneDNN runs the f32 GEMMs, the f32 dense weights held transposed
// (ops/transposed_weights.h: CTranslate2's layout, 1.2-1.5x faster products for decoding's row counts). Either
// way the f32 values a replacement stands for are given back to the system while it runs
// (tensor/released_pages.h: a read of them would stop the program), so that memory holds one copy of each
// weight. Covered by tests/translator/int8_release_test.cpp, tests/translator/transposed_inference_test.cpp and
// tests/training/checkpoint_test.cpp.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "models/int8_model.h"
#include "ops/transposed_weights.h"
#include "tensor/device.h"
#include "tensor/released_pages.h"

namespace moe {

struct LoadedCheckpoint;

/// What inference does with the f32 values of the weights it replaces (int8's per-column weights, not the tables,
/// which the embedding lookups read; f32's transposed weights): releases them, or keeps them (tests compare).
enum class F32Copies { release, keep };

/// The f32 layout of CPU inference: as stored, or the dense weights transposed (where oneDNN runs the GEMMs).
enum class F32Layout { stored, transposed };

/// CPU inference's weights for this object's lifetime: int8 when `quantize` is int8 (the CPU only: an error naming
/// --quantize on a GPU) or the checkpoint is pre-quantized (on a GPU it then runs in its float dtype with the
/// values q * scale); else on the CPU, with `layout` transposed and oneDNN's GEMMs, the per-column weights
/// (int8_role) transposed. The tables' values stay q * scale after it ends, and released weights read as zeros.
class InferenceWeights {
 public:
  InferenceWeights(const LoadedCheckpoint& ck, Quantize quantize, Device device, F32Copies copies = F32Copies::release,
                   F32Layout layout = F32Layout::transposed);
  /// Whether int8 inference is on.
  bool on() const { return int8_active_ != nullptr; }
  /// Whether the f32 weights are held transposed.
  bool transposed() const { return transposed_active_ != nullptr; }
  /// "int8 (N weights, M MiB; f32 copies released: K MiB)" for summaries, "f32" otherwise.
  std::string describe() const;
  /// The bytes of f32 weights given back to the system.
  size_t released_bytes() const;

 private:
  std::unique_ptr<Int8Weights> int8_;
  std::unique_ptr<ActiveInt8Weights> int8_active_;
  std::unique_ptr<TransposedWeights> transposed_;
  std::unique_ptr<ActiveTransposedWeights> transposed_active_;
  std::vector<ReleasedPages> released_;
};

}  // namespace moe
