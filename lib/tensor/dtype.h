// Element types of tensors, their sizes and names, and host-side bf16/f16 conversions.
// bf16 = the top 16 bits of an IEEE f32 (round to nearest even); f16 = IEEE binary16.
// Covered by tests/unit/tensor_test.cpp ("dtype conversions").
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace moe {

enum class DType : uint8_t { f32, f64, bf16, f16, i32, i64, u8 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);
/// Parses "f32", "float32", "bf16", "fp16", ...; throws moe::Error naming the text otherwise.
DType dtype_from_name(const std::string& name);
inline bool is_floating(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::bf16 || t == DType::f16; }

inline uint16_t f32_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_bits_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);

/// Host storage types with the same layout as CUDA's __nv_bfloat16 / __half.
struct bf16 {
  uint16_t bits;
  bf16() = default;
  explicit bf16(float f) : bits(f32_to_bf16_bits(f)) {}
  explicit operator float() const { return bf16_bits_to_f32(bits); }
};
struct f16 {
  uint16_t bits;
  f16() = default;
  explicit f16(float f) : bits(f32_to_f16_bits(f)) {}
  explicit operator float() const { return f16_bits_to_f32(bits); }
};

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<bf16>() { return DType::bf16; }
template <> constexpr DType dtype_of<f16>() { return DType::f16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }

}  // namespace moe
