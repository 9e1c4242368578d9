// An alternate signal stack for the calling thread, so that a handler installed with SA_ONSTACK (the stop
// handlers of common/stop_signal.h) runs on memory of its own rather than wherever the thread's stack
// pointer happens to point. oneDNN's JIT f32 GEMM kernels (Debian 12's libdnnl 2.6.3; oneDNN issue 4845,
// fixed upstream in March 2026) point rsp into a heap workspace while they run: a signal frame pushed there
// overwrote malloc's bookkeeping, and a SIGINT or SIGTERM in the middle of a GEMM ended moe-train with
// "corrupted size vs. prev_size" (abort, status 134) instead of a clean stop. Every thread that calls a oneDNN
// GEMM (ops/cpu_gemm.cpp) calls use_signal_stack() first. Covered by tests/ops/cpu_gemm_test.cpp ("a stop
// signal in the middle of GEMMs").
#pragma once

namespace moe {

/// Gives the calling thread an alternate signal stack of its own, once per thread (a no-op afterwards, or when
/// the thread already has one); it is released when the thread exits.
void use_signal_stack();

}  // namespace moe
