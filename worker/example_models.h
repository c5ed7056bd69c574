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
//   leak       identity that keeps a copy of every input batch: memory grows by 12 bytes per
//              pixel of every frame it sees (a fault fixture for recycling)
// Hostile fixtures for the sandbox tests, each aimed at a `target` file named at export:
//   read_file  reads the target (torch.from_file) and adds its mean byte to every pixel: the
//              file's content leaks into the output video
//   write_file maps the target shared (torch.from_file(..., shared=True)) and fills it with 'X':
//              the file is overwritten; returns its input
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

std::vector<std::string> ExampleModelNames();

// Writes model `name` to `path` (through a temporary file and a rename). `target` is the file the
// hostile fixtures aim at (it must exist: its size is fixed at export); others ignore it.
Status ExportExampleModel(const std::string& name, const std::string& path,
                          const std::string& target = "");

}  // namespace framemill
