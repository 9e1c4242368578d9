// The encoder pass of a decoding batch run on groups of sources of about the same length, so that the
// position-wise layers see few padding rows. A batch sorted longest first still spans a wide range of lengths
// (the first 200 Multi30k test lines: 34 tokens down to 13 in the first 4,096-token batch), and every source
// was padded to the longest: 5,120 encoder rows for 2,984 real tokens, which are all CTranslate2 encodes
// (docs/PERF.md, "The d 512 model against CTranslate2 on the AVX2 machine").
//   groups: rows in order of decreasing length, a row joining the open group while its length is at least
//   9/10 of the group's longest, or while the group holds fewer than kMinGroupRows padded rows;
//   memory[r, t] = encode(group of r)[row of r in its group, t] for t < that group's longest, else 0.
// The rows past a source's length are padding either way (every consumer masks them). Batches that form one
// group, and graphs with a gate recorder or a communicator (whose calls must match the batch), encode whole.
// Covered by tests/translator/encode_by_length_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "layers/builder.h"

namespace moe {

/// Rows grouped for the encoder (see the file comment): each group lists batch rows, longest first.
std::vector<std::vector<int64_t>> length_groups(const std::vector<int64_t>& lengths);

using EncodeFn = std::function<Expr(const Tensor& src, const Tensor& src_mask)>;

/// encode(src, src_mask) by groups of length-alike rows, assembled into the [B, S, d] memory of the whole batch
/// (src [B, S] ids, src_mask [B, S] u8, 1 on the real tokens).
Expr encode_by_length(const Builder& b, const Tensor& src, const Tensor& src_mask, const EncodeFn& encode);

}  // namespace moe
