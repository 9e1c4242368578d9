// int8_model.h: the quantization rules per parameter and the pre-quantized tensors of a checkpoint.
#include "models/int8_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>


namespace moe {

bool is_int8_table(const std::string& name) { return name.rfind("embed.", 0) == 0 || name == "out.w"; }

Int8Role int8_role(const ParamEntry& e) {
  if (e.state || (e.shape.ndim() != 2 && e.shape.ndim() != 3)) return Int8Role::keep_f32;
  std::istringstream parts(e.name);
  for (std::string part; std::getline(parts, part, '.');)
    if (part.rfind("gate", 0) == 0 || part.rfind("router", 0) == 0) return Int8Role::keep_f32;
  if (is_int8_table(e.name)) return e.shape.ndim() == 2 ? Int8Role::per_row : Int8Role::keep_f32;
  return Int8Role::per_column;
}

std::pair<std::string, Int8Matrix> read_int8_weight(const std::string& path, const std::string& name,
                                                    const Tensor& bytes, const Tensor& scale) {
  const std::string param = name.substr(0, name.size() - kInt8Suffix.size());
  const Shape& s = bytes.shape();
  const bool table = is_int8_table(param);
  MOE_CHECK(bytes.dtype() == DType::u8 && (s.ndim() == 2 || (s.ndim() == 3 && !table)), path, ": '", name,
            "' must be a u8 tensor ", table ? "[rows, dim]" : "[K, N] or [E, K, N]", " (int8 bytes), got ",
            dtype_name(bytes.dtype()), " ", s);
  const int64_t want = table ? s[0] : (s.ndim() == 3 ? s[0] : 1) * s[-1];
  MOE_CHECK(scale.dtype() == DType::f32 && scale.numel() == want, path, ": '", param, kInt8ScaleSuffix,
            "' must hold ", want, " f32 scales (one per ", table ? "row" : "output column", " of ", s, "), got ",
            dtype_name(scale.dtype()), " ", scale.shape());
  Int8Matrix m;
  m.shape = s;
  m.per_row = table;
  m.q.resize(static_cast<size_t>(s.numel()));
  std::memcpy(m.q.data(), bytes.raw(), m.q.size());
  m.scale = scale.to_vector<float>();
  const auto widest =
      std::max_element(m.q.begin(), m.q.end(), [](int8_t a, int8_t b) { return std::abs(a) < std::abs(b); });
  if (widest != m.q.end() && std::abs(*widest) > kInt8WeightMax) {  // an older file's 8-bit weights
    static bool said = false;
    if (!std::exchange(said, true))
      spdlog::info("{}: int8 weights of 8 bits (written before moe used 7) requantized to 7 on load", path);
    m = quantize_int8(dequantize_int8(m), table);
  }
  return {param, std::move(m)};
}

void append_int8_weight(std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& name,
                        const Int8Matrix& m) {
  std::vector<uint8_t> bytes(m.q.size());
  std::memcpy(bytes.data(), m.q.data(), bytes.size());
  tensors.emplace_back(name + kInt8Suffix, Tensor::from_vector(bytes, m.shape));
  const Shape scale_shape = m.shape.ndim() == 3 ? Shape{m.shape[0], m.shape[2]} : Shape{m.n()};
  tensors.emplace_back(name + kInt8ScaleSuffix, Tensor::from_vector(m.scale, scale_shape));
}

std::unique_ptr<Int8Weights> quantize_model(ParameterStore& params,
                                            const std::map<std::string, Int8Matrix>& prequantized) {
  auto out = std::make_unique<Int8Weights>();
  for (size_t i = 0; i < params.entries().size(); ++i) {
    const ParamEntry& e = params.entries()[i];
    Tensor value = params.value(static_cast<int>(i));
    if (auto it = prequantized.find(e.name); it != prequantized.end()) {
      out->add(value, it->second);  // the loader put q * scale into the store
      continue;
    }
    const Int8Role role = int8_role(e);
    if (role == Int8Role::keep_f32) continue;
    Int8Matrix m = quantize_int8(value, role == Int8Role::per_row);
    if (m.per_row) value.copy_from(dequantize_int8(m));  // the lookups read what a pre-quantized file holds
    out->add(value, std::move(m));
  }
  return out;
}

}  // namespace moe
