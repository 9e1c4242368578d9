// BuildContext: what the layers of one graph read at run time besides their inputs, as typed fields
// set once by whoever builds the graph (the trainer's update schedule, the translator, the scorers):
// how mixture-of-attentive-experts sites weight their experts, the target tokens of the batch the
// graph computes (aux losses normalised per token), the gate recorder of analysis runs and the
// communicator of a run over several ranks (MoE layers: balancing statistics of the global batch,
// expert parallelism) and where a translation model's teacher-forced pass leaves its alignment head's weights
// (guided-alignment training). The graph gives the rest: training or inference mode, device and compute dtype
// (Builder::training, dtype). Covered by tests/layers/mae_test.cpp, tests/layers/moa_test.cpp and
// tests/dist/expert_parallel_test.cpp.
#pragma once
#include <cstdint>

#include "common/named_enum.h"

namespace moe {

class Expr;          // graph/node.h
class GateRecorder;  // layers/gate_recorder.h
namespace dist {
class Communicator;  // dist/communicator.h
}

/// How an MAE site weights its experts: the gate's mixture (training's gate and joint passes;
/// inference by default), one expert drawn from the gate per sentence or position (training's expert
/// pass, "F"), or the most-weighted expert (`--mae-inference argmax`).
MOE_NAMED_ENUM(ExpertChoice, mixture, sample, argmax)

struct BuildContext {
  ExpertChoice experts = ExpertChoice::mixture;
  /// Target tokens of the batch (MoA's aux_normalization sum divides by them; 0 = unknown: the site
  /// uses its own count of real queries).
  int64_t target_tokens = 0;
  /// Analysis hook (layers/gate_recorder.h): gated sites of inference graphs report their gate
  /// probabilities to it; nullptr reports nothing.
  GateRecorder* recorder = nullptr;
  /// The ranks this graph runs with (the trainer sets it when there are several): MoE layers sum their
  /// balancing statistics over them and, with experts_per_rank, exchange tokens with the ranks that
  /// hold their experts. nullptr (or one rank): everything local.
  dist::Communicator* comm = nullptr;
  /// Guided alignment (training/guided_alignment.h): set, a translation model's teacher-forced pass (Model::loss)
  /// writes its alignment head's weights [B, T, S] here, as Decoder::alignment gives them; nullptr: nothing.
  Expr* alignment = nullptr;
};

}  // namespace moe
