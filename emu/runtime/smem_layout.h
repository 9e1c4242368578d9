// CUDA emulator (emu/README.md): the shared-memory layouts of Hopper's asynchronous units. Swizzling
// (TMA's CU_TENSOR_MAP_SWIZZLE_{32,64,128}B and wgmma's descriptor modes) permutes the 16-byte chunks
// of each 32/64/128-byte row by the address: bits [4, 4+b) are XORed with bits [7, 7+b), b = log2(span /
// 16), so both units agree on where an element lives. wgmma's matrix descriptors (PTX 9.7.15.5.1.2.2) and
// their canonical layouts, for 16-bit elements and one k16 step (MN index mn, K index k < 16), in bytes:
//   K-major,  no swizzle: start + (mn%8)*16   + (mn/8)*SBO + (k/8)*LBO + (k%8)*2
//   K-major,  span S:     start + (mn%8)*S    + (mn/8)*SBO + (k/8)*16  + (k%8)*2
//   MN-major, no swizzle: start + (mn%8)*2 + (mn/8)*SBO + (k%8)*16 + (k/8)*LBO
//   MN-major, span S:     start + (mn%8)*2 + ((mn/8)%(S/16))*16 + (mn/(S/2))*LBO + (k%8)*S + (k/8)*SBO
// Covered by tests/gpu/ptx_instructions_parity_test.cpp.
#pragma once
#include <cstddef>
#include <cstdint>

namespace moe_emu {

/// The swizzled place of shared-memory byte offset `off` for a swizzle span of 0 (none), 32, 64 or 128 bytes.
inline size_t swizzle(size_t off, unsigned span) {
  switch (span) {
    case 32:
      return off ^ ((off >> 3) & 0x10);
    case 64:
      return off ^ ((off >> 3) & 0x30);
    case 128:
      return off ^ ((off >> 3) & 0x70);
    default:
      return off;
  }
}

struct SmemDescriptor {
  uint32_t start, lbo, sbo;  // bytes
  unsigned base_offset;
  unsigned span;  // swizzle span in bytes, 0: none; 1 when the mode field is invalid (never: two bits)
};

inline SmemDescriptor decode_descriptor(uint64_t d) {
  static constexpr unsigned spans[4] = {0, 128, 64, 32};
  return SmemDescriptor{uint32_t(d & 0x3fff) << 4, uint32_t((d >> 16) & 0x3fff) << 4, uint32_t((d >> 32) & 0x3fff) << 4,
                        unsigned((d >> 49) & 7), spans[d >> 62]};
}

/// The shared-memory byte offset of element (mn, k) of a 16-bit operand the descriptor describes.
inline size_t element_offset(const SmemDescriptor& d, bool mn_major, int mn, int k) {
  size_t off = d.start;
  if (!mn_major && !d.span)
    off += size_t(mn % 8) * 16 + size_t(mn / 8) * d.sbo + size_t(k / 8) * d.lbo + size_t(k % 8) * 2;
  else if (!mn_major)
    off += size_t(mn % 8) * d.span + size_t(mn / 8) * d.sbo + size_t(k / 8) * 16 + size_t(k % 8) * 2;
  else if (!d.span)
    off += size_t(mn % 8) * 2 + size_t(mn / 8) * d.sbo + size_t(k % 8) * 16 + size_t(k / 8) * d.lbo;
  else
    off += size_t(mn % 8) * 2 + size_t((mn / 8) % (d.span / 16)) * 16 + size_t(mn / (d.span / 2)) * d.lbo +
           size_t(k % 8) * d.span + size_t(k / 8) * d.sbo;
  return swizzle(off, d.span);
}

}  // namespace moe_emu
