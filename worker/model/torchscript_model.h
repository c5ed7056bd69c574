// TorchScript models (torch.jit, what scripts/ and the importers in worker/model_import/ save) as a
// FrameModel. The bytes come from the caller (model_loader.h reads the file once and picks the
// format); this file never opens one.
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "common/config.h"
#include "common/status.h"
#include "worker/model/frame_model.h"

namespace framemill {

// Loads the TorchScript model whose whole content is `bytes` onto `device` with weights in
// `dtype`, in eval mode; Run() then takes batches of that dtype. `label` names the model in
// messages only. `optimization` (common/config.h): with it on, the module is frozen and optimized
// for inference after the dtype change; a module that cannot be frozen runs as loaded, with a
// warning. `bytes` is read in place (not copied), not changed.
Result<std::unique_ptr<FrameModel>> TorchScriptFromBytes(std::string& bytes,
                                                         const std::string& label,
                                                         const torch::Device& device,
                                                         torch::ScalarType dtype,
                                                         ModelOptimization optimization);

// Whether `optimization` freezes a model on `device` (kAuto: on CUDA only).
bool FreezesModel(ModelOptimization optimization, const torch::Device& device);

}  // namespace framemill
