// Pinned-buffer batch upload (see batch_upload.h). Without CUDA only the CPU target exists.
// Covered by tests/data/batch_upload_test.cpp.
#include "data/batch_upload.h"

#include <cstring>

#include "common/error.h"

#ifdef MOE_WITH_CUDA
#include <cuda_runtime.h>

#include "common/context.h"
#endif

namespace moe::data {

#ifdef MOE_WITH_CUDA
#define MOE_UPLOAD_CHECK(call)                                                                          \
  do {                                                                                                  \
    const cudaError_t e_ = (call);                                                                      \
    MOE_CHECK(e_ == cudaSuccess, "BatchUploader: ", #call, " failed: ", cudaGetErrorString(e_));       \
  } while (0)
#endif

BatchUploader::BatchUploader(Device device, int slots) : device_(device) {
  MOE_CHECK(slots > 0, "BatchUploader: need at least one slot, got ", slots);
#ifndef MOE_WITH_CUDA
  MOE_CHECK(device.is_cpu(), "BatchUploader: cannot upload to ", device, ": built without CUDA");
#endif
  slots_.resize(static_cast<size_t>(device.is_cuda() ? slots : 0));
}

BatchUploader::~BatchUploader() {
#ifdef MOE_WITH_CUDA
  for (auto& s : slots_) {
    if (s.event) {
      cudaEventSynchronize(static_cast<cudaEvent_t>(s.event));
      cudaEventDestroy(static_cast<cudaEvent_t>(s.event));
    }
    if (s.host) cudaFreeHost(s.host);
  }
#endif
}

std::vector<Tensor> BatchUploader::transfer(const std::vector<const Tensor*>& tensors) {
  std::vector<Tensor> out;
#ifdef MOE_WITH_CUDA
  constexpr size_t kAlign = 256;
  size_t total = 0;
  for (const Tensor* t : tensors) {
    MOE_CHECK(t->device().is_cpu(), "BatchUploader: batch tensor ", t->shape(), " is on ", t->device(),
              ", expected the CPU");
    total += (t->bytes() + kAlign - 1) / kAlign * kAlign;
  }
  MOE_UPLOAD_CHECK(cudaSetDevice(device_.index));
  Slot& s = slots_[next_++ % slots_.size()];
  if (s.pending) MOE_UPLOAD_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(s.event)));  // ring wrapped
  s.pending = false;
  if (s.bytes < total) {
    if (s.host) MOE_UPLOAD_CHECK(cudaFreeHost(s.host));
    s.host = nullptr;
    s.bytes = 0;
    const size_t want = total + total / 2 + kAlign;  // headroom for slightly longer batches
    MOE_UPLOAD_CHECK(cudaHostAlloc(&s.host, want, cudaHostAllocDefault));
    s.bytes = want;
  }
  if (!s.event) {
    cudaEvent_t e;
    MOE_UPLOAD_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    s.event = e;
  }
  cudaStream_t stream = cuda::stream(device_);
  char* host = static_cast<char*>(s.host);
  size_t off = 0;
  for (const Tensor* t : tensors) {
    Tensor d = Tensor::empty(t->shape(), t->dtype(), device_);
    const size_t n = t->bytes();
    if (n > 0) {
      std::memcpy(host + off, t->raw(), n);
      MOE_UPLOAD_CHECK(cudaMemcpyAsync(d.raw(), host + off, n, cudaMemcpyHostToDevice, stream));
    }
    off += (n + kAlign - 1) / kAlign * kAlign;
    out.push_back(std::move(d));
  }
  MOE_UPLOAD_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(s.event), stream));
  s.pending = true;
#else
  (void)tensors;
  MOE_FAIL("BatchUploader: built without CUDA");
#endif
  return out;
}

template <class B, size_t N>
B BatchUploader::upload_fields(const B& b, const std::array<Tensor B::*, N>& fields) {
  if (device_.is_cpu()) return b;
  B out = b;
  std::vector<const Tensor*> in;
  std::vector<Tensor*> to;
  for (auto field : fields)
    if ((b.*field).defined()) {
      in.push_back(&(b.*field));
      to.push_back(&(out.*field));
    }
  auto t = transfer(in);
  for (size_t i = 0; i < to.size(); ++i) *to[i] = std::move(t[i]);
  return out;
}

Batch BatchUploader::upload(const Batch& b) { return upload_fields(b, kBatchTensors); }

LmBatch BatchUploader::upload(const LmBatch& b) { return upload_fields(b, kLmBatchTensors); }

}  // namespace moe::data
