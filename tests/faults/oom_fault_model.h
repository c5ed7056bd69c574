// Test fault (FRAMEMILL_TEST_FAULT=oom_over:MB, tests/faults/fault_injection.h): a FrameModel
// wrapped so that a call whose input is larger than a limit runs out of memory the way CUDA's
// allocator does: a c10::OutOfMemoryError ("CUDA out of memory. Tried to allocate ...") raised
// where the model runs and turned into a Status by the same ModelRaised (frame_model.h) as a real
// one. So the fallbacks of worker/model/tiled_model.h meet the error they meet on a GPU, on any
// device. Not in the product: the tests' framemill-worker-faults puts it around the model (through
// worker/worker_hooks.h), and the unit tests use it directly.
#pragma once

#include <cstdint>
#include <memory>

#include "worker/model/frame_model.h"

namespace framemill {

class OomFaultModel : public FrameModel {
 public:
  // Calls with more than `limit_mb` MiB of input (elements x element size) run out of memory.
  OomFaultModel(std::unique_ptr<FrameModel> inner, int64_t limit_mb)
      : inner_(std::move(inner)), limit_bytes_(limit_mb << 20) {}

  Result<torch::Tensor> Run(const torch::Tensor& batch) override;
  const torch::Device& device() const override { return inner_->device(); }
  torch::ScalarType dtype() const override { return inner_->dtype(); }

 private:
  std::unique_ptr<FrameModel> inner_;
  int64_t limit_bytes_;
};

}  // namespace framemill
