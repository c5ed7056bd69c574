// Loading a model file: its bytes read once, through the descriptor the worker was given, then
// handed to the loader of the format its content names (common/model_format.h): TorchScript
// (torchscript_model.h) or a .pt2 package (pt2_model.h). What the worker, the tools and the
// benchmark call; the formats' loaders never read a file themselves.
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "common/config.h"
#include "common/status.h"
#include "worker/model/frame_model.h"

namespace framemill {

// Loads the model open at `fd` whatever its format, told by its content (common/model_format.h):
// TorchScript as LoadTorchScriptModel does, a .pt2 package through worker/model/pt2_model.h
// (`optimization` does not apply: a package is compiled already). What the worker and the
// benchmark load.
Result<std::unique_ptr<FrameModel>> LoadFrameModel(
    int fd, const std::string& label, const torch::Device& device,
    torch::ScalarType dtype = torch::kFloat32,
    ModelOptimization optimization = ModelOptimization::kOff);

// The same from a file name.
Result<std::unique_ptr<FrameModel>> LoadFrameModel(
    const std::string& path, const torch::Device& device, torch::ScalarType dtype = torch::kFloat32,
    ModelOptimization optimization = ModelOptimization::kOff);

// Loads a TorchScript model onto `device` with weights in `dtype`, in eval mode. Run() then
// takes batches of that dtype. The model is read whole from `fd` into memory first (with pread
// from offset 0: the descriptor's file offset is shared with every worker holding a duplicate,
// and is left alone), so the file is read once, as it was, and never opened by name. `label`
// names the model in messages only. The descriptor stays open (the caller owns it).
// `optimization` (common/config.h): with it on, the module is frozen and optimized for inference
// after the dtype change; a module that cannot be frozen runs as loaded, with a warning.
Result<std::unique_ptr<FrameModel>> LoadTorchScriptModel(
    int fd, const std::string& label, const torch::Device& device,
    torch::ScalarType dtype = torch::kFloat32,
    ModelOptimization optimization = ModelOptimization::kOff);

// The same from a file name (tools; workers get a descriptor).
Result<std::unique_ptr<FrameModel>> LoadTorchScriptModel(
    const std::string& path, const torch::Device& device, torch::ScalarType dtype = torch::kFloat32,
    ModelOptimization optimization = ModelOptimization::kOff);

// The bytes of the regular file open at `fd`, read with pread from offset 0.
Result<std::string> ReadWholeFile(int fd, const std::string& label);

}  // namespace framemill
