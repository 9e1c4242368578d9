// Moves CPU batches to a GPU through pinned (page-locked) host staging buffers: the batch's arrays
// are packed into one pinned buffer of a small ring, then copied with cudaMemcpyAsync on the
// device's engine stream (cuda::stream), so the copy overlaps compute and never syncs the host
// unless the ring wraps onto a copy still in flight (an event per slot guards reuse).
// CPU target: batches pass through unchanged. Covered by tests/data/batch_upload_test.cpp (CPU path);
// the CUDA path is compiled in CUDA builds and not yet run on a GPU.
#pragma once
#include <vector>

#include "data/batch.h"
#include "tensor/device.h"

namespace moe::data {

class BatchUploader {
 public:
  explicit BatchUploader(Device device, int slots = 4);
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  /// Same batch with its tensors on the device (ids, lengths and counts copied as they are).
  Batch upload(const Batch& b);
  LmBatch upload(const LmBatch& b);
  Device device() const { return device_; }

 private:
  struct Slot {
    void* host = nullptr;   // pinned buffer
    size_t bytes = 0;
    void* event = nullptr;  // cudaEvent_t recorded after the slot's copies
    bool pending = false;
  };
  /// Copies `tensors` (CPU) into fresh device tensors through the next slot.
  std::vector<Tensor> transfer(const std::vector<const Tensor*>& tensors);
  /// `b` with its defined `fields` transferred.
  template <class B, size_t N>
  B upload_fields(const B& b, const std::array<Tensor B::*, N>& fields);
  Device device_;
  std::vector<Slot> slots_;
  size_t next_ = 0;
};

}  // namespace moe::data
