// CUDA emulator (emu/README.md): the vector types of CUDA's vector_types.h with the same sizes and
// alignments (16-byte uint4/float4/int4, 8-byte uint2/float2/int2), dim3 and the make_* helpers.
#pragma once

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};

inline constexpr uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline constexpr uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
inline constexpr int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
inline constexpr int2 make_int2(int x, int y) { return int2{x, y}; }
inline constexpr float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline constexpr float2 make_float2(float x, float y) { return float2{x, y}; }
inline constexpr uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }
