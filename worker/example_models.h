// The example models, built in C++ with torch::jit::Module::define (no Python needed) and saved
// as TorchScript files:
//   identity   returns its input (for frame-exactness tests)
//   invert     1 - x
//   sharpen    a fixed 3x3 depthwise sharpening convolution
//   upscale2x  a convolution to 12 channels + pixel shuffle: 2x nearest-neighbour upscale
//   heavy      a deep convolutional net with random (seeded) weights, for benchmarks; its
//              output stays close to its input
//   leak       identity that keeps a copy of every input batch: memory grows by 12 bytes per
//              pixel of every frame it sees (a fault fixture for recycling)
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

std::vector<std::string> ExampleModelNames();

// Writes model `name` to `path` (through a temporary file and a rename).
Status ExportExampleModel(const std::string& name, const std::string& path);

}  // namespace framemill
