// Fused LSTM cell point-wise math over pre-activation gates [B, 4H] in the order i, f, o, g:
//   state:  c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g)      (c_prev undefined = zeros)
//           dgi += dc sig(i)(1-sig(i)) tanh(g); dgf += dc sig(f)(1-sig(f)) c_prev;
//           dgg += dc sig(i)(1-tanh(g)^2);      dc_prev += dc sig(f)
//   output: h = sigmoid(o) * tanh(c)
//           dgo += dh sig(o)(1-sig(o)) tanh(c);  dc += dh sig(o)(1-tanh(c)^2)
// Backward adds into the gradients. CPU reference in lib/ops/lstm_cell.cpp, CUDA in cuda/ops/lstm_cell.cu.
// Covered by tests/ops/lstm_cell_test.cpp and tests/gpu/lstm_cell_parity_test.cpp.
#pragma once
#include "tensor/tensor.h"

namespace moe {

namespace cpu {
void lstm_cell_state_forward(const Tensor& gates, const Tensor& c_prev, Tensor& c);
void lstm_cell_state_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& dc, Tensor& dgates,
                              Tensor& dc_prev);
void lstm_cell_output_forward(const Tensor& gates, const Tensor& c, Tensor& h);
void lstm_cell_output_backward(const Tensor& gates, const Tensor& c, const Tensor& dh, Tensor& dgates, Tensor& dc);
}  // namespace cpu
namespace cuda {
void lstm_cell_state_forward(const Tensor& gates, const Tensor& c_prev, Tensor& c);
void lstm_cell_state_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& dc, Tensor& dgates,
                              Tensor& dc_prev);
void lstm_cell_output_forward(const Tensor& gates, const Tensor& c, Tensor& h);
void lstm_cell_output_backward(const Tensor& gates, const Tensor& c, const Tensor& dh, Tensor& dgates, Tensor& dc);
}  // namespace cuda

/// c [B, H] from gates [B, 4H] and c_prev [B, H] (or an undefined Tensor).
void lstm_cell_state_forward(const Tensor& gates, const Tensor& c_prev, Tensor& c);
/// dgates += (i, f, g parts), dc_prev += (when defined).
void lstm_cell_state_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& dc, Tensor& dgates,
                              Tensor& dc_prev);
/// h [B, H] from gates [B, 4H] and c [B, H].
void lstm_cell_output_forward(const Tensor& gates, const Tensor& c, Tensor& h);
/// dgates += (o part), dc += (each when defined).
void lstm_cell_output_backward(const Tensor& gates, const Tensor& c, const Tensor& dh, Tensor& dgates, Tensor& dc);

}  // namespace moe
