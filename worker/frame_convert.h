// The arena's input frames -> the model's input: [b, 3, h, w] of the model's dtype, RGB in [0, 1],
// channels-last in memory, on whatever device the frames are (the worker's, once uploaded).
//
//   rgb24:   a permute and a scale
//   yuv420p: chroma upsampled (bicubic, centre-sited: as swscale does by default), then the
//            colour space's matrix, limited or full range, as ffmpeg would convert it (within a
//            fraction of a level: tests/integration/frame_exact_test.cpp measures it)
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "common/frame_format.h"

namespace framemill {

struct InputLayout {
  FrameFormat format = FrameFormat::kRgb24;
  int64_t height = 0, width = 0;
  YuvMatrix matrix = YuvMatrix::kBt601;  // yuv420p only
  bool full_range = false;               // yuv420p only

  int64_t FrameBytes() const {
    return static_cast<int64_t>(
        framemill::FrameBytes(format, static_cast<uint32_t>(width), static_cast<uint32_t>(height)));
  }
};

// `frames`: uint8 [b, in.FrameBytes()], each row one frame as the arena holds it.
torch::Tensor ToModelInput(const torch::Tensor& frames, const InputLayout& in,
                           torch::ScalarType dtype);

}  // namespace framemill
