// The example models, built in C++ with torch::jit::Module::define (no Python needed) and saved
// as TorchScript files:
//   identity   returns its input (for frame-exactness tests)
//   invert     1 - x
//   sharpen    a fixed 3x3 depthwise sharpening convolution
//   upscale2x  a convolution to 12 channels + pixel shuffle: 2x nearest-neighbour upscale
//   heavy      a deep convolutional net with random (seeded) weights, for benchmarks; its
//              output stays close to its input
//   restore    a residual restoration net of realistic size (64 channels, 8 residual blocks,
//              about 2.4 TFLOP per 1080p frame), random (seeded) weights, output close to input
// The tests' fault and hostile fixtures (a leaking model, models that read or write a file) are
// not here: they live with the tests (tests/fixtures/fixture_models.cpp).
#pragma once

#include <string>
#include <vector>

#include <torch/script.h>

#include "common/status.h"

namespace framemill {

std::vector<std::string> ExampleModelNames();

// Writes model `name` to `path` (SaveModule).
Status ExportExampleModel(const std::string& name, const std::string& path);

// Saves `module` as a TorchScript file at `path`, through a temporary file and a rename (a
// reader never sees half a file). Errors: kIo.
Status SaveModule(torch::jit::Module& module, const std::string& path);

}  // namespace framemill
