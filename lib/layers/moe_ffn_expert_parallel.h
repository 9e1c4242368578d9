// Expert parallelism for the MoE layer (Shazeer et al. 2017 §3.1: data-parallel everywhere else,
// experts spread over the ranks): with model.ffn.experts_per_rank = e and N ranks, rank r holds the
// experts [r*e, (r+1)*e) of the n = N*e. Each rank routes its own tokens over all n experts, sorts
// the assignments by expert (so each destination's rows are contiguous), exchanges the per-expert
// counts, sends the rows with one all_to_all_v, regroups what it received by local expert, runs its
// experts with the grouped GEMM, restores the received order and sends the outputs back with a second
// all_to_all_v; the combine (gate weights, index_add) is the single-process one. The backward mirrors
// both exchanges (dist/collective_exprs.h). No token is dropped: the exchanges have variable sizes.
// The importance and load statistics of the balancing losses are summed over the ranks whenever the
// build context has a communicator with several ranks (BuildContext::comm, also for data parallelism
// alone), so the losses are those of the global batch. A token capacity (moe_capacity.h) sends each rank
// its experts' fixed buffers through the same exchange. Covered by tests/dist/expert_parallel_test.cpp.
#pragma once
#include "dist/communicator.h"
#include "layers/moe_ffn_dispatch.h"

namespace moe {

/// The parameter group of this rank's experts when the layer runs expert-parallel (their first axis is
/// experts_per_rank, not experts): the trainer keeps them out of the data-parallel all-reduce and
/// gathers them for checkpoints (training/data_parallel.h).
inline constexpr const char* kLocalExpertGroup = "expert_local";

/// moe_dispatch with `local` = this rank's experts ([e, ...] each); routing.expert indexes all
/// comm.world() * e experts. Builds (and computes) the routing part of the graph to size the exchange.
Expr moe_dispatch_expert_parallel(const Expr& x, const Routing& routing, const ExpertWeights& local, bool autoscale,
                                  dist::Communicator& comm);

}  // namespace moe
