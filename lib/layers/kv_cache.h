// The decoding caches of attention layers: keys and values of earlier positions kept between beam-search
// steps, and the per-hypothesis state of gated sites.
// A self-attention cache appends in place: k and v are storage [R, C, Hk, dh] whose column t is written once,
// at step t, in the rows of that step's hypotheses (row i for hypothesis i), and key_rows (i32 [N, t]) says
// where each hypothesis's keys are: key j of hypothesis i is k[key_rows[i, j], j]. Reordering the hypotheses
// (row i becomes row origin[i]) rewrites only that table: key_rows' = key_rows[origin], then a column of
// row numbers for the new keys, so a step copies t * 4 bytes per hypothesis instead of 2 t Hk dh elements.
// When the columns run out (then doubled), the hypotheses outnumber the rows, or half the rows are no longer
// named, the cache compacts: the named keys are copied into new storage (row i for hypothesis i), so memory
// stays within 2x the live keys along each axis and the copies cost O(1) per key over a decoding. Attention reads
// through the table (lib/ops/attention.h, key_rows). A cross-attention cache holds the encoder's keys and values
// once per source sentence, [B, S, Hk, dh], and from the first reorder on a row table too (i32 [N, S]: hypothesis
// i reads row key_rows[i, j] of column j, its sentence's row at every column); a reorder (lazily, through `order`,
// and only when the sentences change) rewrites the table, never the keys: beam x less memory than keys per
// hypothesis, and no copy when finished sentences leave the batch.
// Covered by tests/layers/kv_cache_test.cpp and, through decoding, tests/translator/beam_search_test.cpp.
#pragma once
#include <map>
#include <string>

#include "tensor/tensor.h"

namespace moe {

struct KVCache {
  Tensor k, v;                         // self-attention: storage [R, C, Hk, dh]; cross-attention: [B, S, Hk, dh]
  Tensor key_rows;                     // i32 [N, t], k's row of each hypothesis's key j (column j); cross: [N, S]
  Tensor order;                        // i32 [N]: a reorder not yet applied (row i is row order[i]); undefined: none
  std::map<std::string, Tensor> rows;  // [N, ...] per hypothesis, reordered with k and v
  int64_t positions = 0;               // query positions a gated site has consumed so far
  bool defined() const { return k.defined(); }
};

/// Keeps (and duplicates) hypotheses: row i of every cached tensor becomes row origin[i] (i32 [M]). The rows
/// at once; k and v (or the row table) at their next use.
void reorder_cache(KVCache& cache, const Tensor& origin);
/// The same for the per-hypothesis state (cache.rows) only: for a cross-attention cache whose keys and values
/// already hold each new row's source sentence.
void reorder_cache_rows(KVCache& cache, const Tensor& origin);
/// Rows origin[i] of t along axis 0 (t undefined stays undefined).
Tensor select_rows(const Tensor& t, const Tensor& origin);

/// Self-attention: applies a pending reorder to the row table and appends this step's keys and values
/// ([N, s, Hk, dh] each) in place; afterwards k, v and key_rows are what attention reads.
void append_to_cache(KVCache& cache, const Tensor& k, const Tensor& v);

/// Cross-attention: applies a pending reorder to the row table (made at the first: row i names storage row i);
/// afterwards k, v and key_rows (undefined before any reorder: hypothesis i is sentence i) are what attention reads.
void apply_cross_order(KVCache& cache);

}  // namespace moe
