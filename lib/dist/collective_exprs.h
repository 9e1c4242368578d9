// Collectives as expression-graph nodes (what expert parallelism builds its layer from). Every rank
// must build the same nodes in the same order: the forward runs the collective when the graph
// computes the node, the backward runs the mirrored collective in the reverse walk.
//   all_to_all_rows(x, send, recv)  x [sum send, ...] -> [sum recv, ...]: rows to and from every rank
//                                   (Communicator::all_to_all_v); backward: the gradient rows go back
//                                   the way they came (send and recv swapped)
//   all_reduce_sum(x)               sum over ranks of x; backward: the sum over ranks of the gradient
//                                   (every rank's loss term depends on every rank's x)
// Covered by tests/dist/expert_parallel_test.cpp.
#pragma once
#include <vector>

#include "dist/communicator.h"
#include "graph/graph.h"

namespace moe::dist {

Expr all_to_all_rows(Communicator& comm, const Expr& x, const std::vector<int64_t>& send,
                     const std::vector<int64_t>& recv);
Expr all_reduce_sum(Communicator& comm, const Expr& x);

}  // namespace moe::dist
