#include "tests/faults/oom_fault_model.h"

#include <c10/util/Exception.h>

namespace framemill {

Result<torch::Tensor> OomFaultModel::Run(const torch::Tensor& batch) {
  const int64_t bytes = batch.numel() * static_cast<int64_t>(batch.element_size());
  if (bytes > limit_bytes_) {
    try {
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CUDA out of memory. Tried to allocate ",
                       bytes >> 20, " MiB (test fault oom_over: the input of ",
                       c10::str(batch.sizes()), " is over ", limit_bytes_ >> 20, " MiB)");
    } catch (const std::exception& e) {
      return ModelRaised(e);
    }
  }
  return inner_->Run(batch);
}

}  // namespace framemill
