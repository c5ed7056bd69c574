// An example model (worker/model/example_models.h) for the worker's torch unit tests: exported by
// the worker's own code and loaded as a worker loads it, with weights in `dtype`.
#pragma once

#include <memory>
#include <string>
#include <unistd.h>

#include <torch/torch.h>

#include "doctest_with_torch.h"
#include "worker/model/example_models.h"
#include "worker/model/frame_model.h"
#include "worker/model/model_loader.h"

namespace framemill::test {

inline std::unique_ptr<FrameModel> ExampleModel(const std::string& name,
                                                const torch::Device& device,
                                                torch::ScalarType dtype = torch::kFloat32) {
  const std::string path =
      "/tmp/framemill-unit-test-" + std::to_string(::getpid()) + "-" + name + ".pt";
  REQUIRE(ExportExampleModel(name, path).ok());
  Result<std::unique_ptr<FrameModel>> m = LoadTorchScriptModel(path, device, dtype);
  ::unlink(path.c_str());
  REQUIRE(m.ok());
  return std::move(*m);
}

}  // namespace framemill::test
