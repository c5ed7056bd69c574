// The arena's frames <-> the model's tensors, on whatever device the frames are (the worker's,
// once uploaded): the same torch code on the CPU and on CUDA.
//
// In: [b, 3, h, w] of the model's dtype, RGB in [0, 1], channels-last in memory.
//   rgb24:   a permute and a scale by 1/255
//   rgb48:   the same, by 1/65535 (little-endian uint16, read through int16: torch 1.13 has no
//            uint16), so a picture reaches the model with the same values at 8 and at 16 bits,
//            within the 8-bit one's rounding
//   yuv420p: each chroma sample repeated over its 2x2 luma block, then the colour space's matrix,
//            limited or full range, as ffmpeg converts it on the decoder's colour path
//            (supervisor/media/color_path.h) within a fraction of a level
//            (tests/integration/frame_exact_test.cpp measures it)
// Out: the model's [b, 3, oh, ow] clamped to [0, 1], scaled to 255 or 65535 and rounded (half up
//   at 8 bits, half to even at 16), written into the frames' NHWC bytes.
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

// The element type an output frame of `format` is stored as: uint8 for rgb24, int16 for rgb48
// (the same bits as uint16, which torch 1.13 lacks: a level above 32767 is stored as itself minus
// 65536).
torch::ScalarType OutputElementType(FrameFormat format);

// The model's output `y` [b, 3, oh, ow], of any float type, into `dst` [b, oh, ow, 3] of
// OutputElementType(format) on the same device.
void WriteOutputFrames(const torch::Tensor& y, const torch::Tensor& dst, FrameFormat format);

}  // namespace framemill
