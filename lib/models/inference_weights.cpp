// inference_weights.h implementation.
#include "models/inference_weights.h"

#include <spdlog/spdlog.h>

#include <sstream>

#include "models/checkpoint.h"
#include "ops/cpu_gemm.h"

namespace moe {

InferenceWeights::InferenceWeights(const LoadedCheckpoint& ck, Quantize quantize, Device device, F32Copies copies,
                                   F32Layout layout) {
  const ParameterStore& params = *ck.params;
  if (quantize == Quantize::none && ck.int8.empty()) {
    if (device.is_cuda() || layout == F32Layout::stored || cpu_gemm_backend() == CpuGemmBackend::openblas) return;
    transposed_ = std::make_unique<TransposedWeights>();
    for (size_t i = 0; i < params.entries().size(); ++i) {
      const ParamEntry& e = params.entries()[i];
      if (e.shape.ndim() == 2 && int8_role(e) == Int8Role::per_column) transposed_->add(params.value(static_cast<int>(i)));
    }
    transposed_active_ = std::make_unique<ActiveTransposedWeights>(transposed_.get());
  } else {
    if (device.is_cuda()) {
      MOE_CHECK(quantize == Quantize::none, "--quantize ", enum_name(quantize),
                " runs on the CPU only (use --device cpu; on a GPU moe computes in f32, bf16 or f16)");
      spdlog::info("a pre-quantized checkpoint on {}: its weights run as f32 values q * scale", device.str());
      return;
    }
    int8_ = quantize_model(*ck.params, ck.int8);
    int8_active_ = std::make_unique<ActiveInt8Weights>(int8_.get());
  }
  if (copies == F32Copies::keep) return;
  for (size_t i = 0; i < params.entries().size(); ++i) {
    const Tensor value = params.value(static_cast<int>(i));
    const Int8Matrix* m = int8_ ? int8_->find(value) : nullptr;
    if ((m && !m->per_row) || (transposed_ && transposed_->find(value))) released_.emplace_back(value.raw(), value.bytes());
  }
}

size_t InferenceWeights::released_bytes() const {
  size_t n = 0;
  for (const ReleasedPages& r : released_) n += r.bytes();
  return n;
}

std::string InferenceWeights::describe() const {
  if (!on()) return "f32";
  std::ostringstream os;
  os << "int8 (" << int8_->size() << " weights, " << (int8_->bytes() >> 20)
     << " MiB; f32 copies released: " << (released_bytes() >> 20) << " MiB)";
  return os.str();
}

}  // namespace moe
