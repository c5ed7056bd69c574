// The devices the worker's torch unit tests run on: the CPU, and the GPU named by
// FRAMEMILL_TEST_DEVICE (cuda, cuda:N) when this LibTorch has CUDA and one is there.
#pragma once

#include <cstdlib>
#include <cstring>
#include <vector>

#include <torch/torch.h>

namespace framemill::test {

inline std::vector<torch::Device> TorchTestDevices() {
  std::vector<torch::Device> d = {torch::kCPU};
  const char* env = std::getenv("FRAMEMILL_TEST_DEVICE");
  if (env != nullptr && std::strncmp(env, "cuda", 4) == 0 && torch::cuda::is_available()) {
    d.emplace_back(env);
  }
  return d;
}

}  // namespace framemill::test
