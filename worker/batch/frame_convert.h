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
//            (tests/integration/frame_exact_test.cpp measures it); clamped to [0, 1] unless the
//            layout says `unclamped`
// Out: rgb24, rgb48: the model's [b, 3, oh, ow] clamped to [0, 1], scaled to 255 or 65535 and
//   rounded (half up at 8 bits, half to even at 16), written into the frames' NHWC bytes.
//   yuv420p (the input's colour path back, in float): the input layout's matrix and range, each
//   2x2 block's chroma averaged, then rounded half up and clamped to 0..255, planes Y, U, V.
//
// The unclamped float path (yuv420p in and out) is what keeps an identity pass at the encoder's
// own loss: a 4:2:0 picture's colour edges hold luma and chroma pairs outside the RGB cube (the
// chroma of a 2x2 block is shared by pixels of both sides of the edge), and clamping them in RGB
// cost 2-3 dB of PSNR against the source where 16-bit RGB gained nothing (BENCHMARKS.md,
// "Identity fidelity"). The model then sees those pixels a little outside [0, 1].
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "common/frame_format.h"

namespace framemill {

struct InputLayout {
  FrameFormat format = FrameFormat::kRgb24;
  int64_t height = 0, width = 0;
  YuvMatrix matrix = YuvMatrix::kBt601;  // yuv420p only
  bool full_range = false;               // yuv420p only
  bool unclamped = false;  // yuv420p only: RGB outside [0, 1] reaches the model as it is

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

// The shape of `b` output frames of `format` as the arena holds them: [b, h, w, 3] for rgb24 and
// rgb48, [b, FrameBytes] for yuv420p.
std::vector<int64_t> OutputFramesShape(FrameFormat format, int64_t b, int64_t h, int64_t w);

// The model's output `y` [b, 3, oh, ow], of any float type, into `dst` (OutputFramesShape, of
// OutputElementType(format)) on the same device. `colour`: the matrix and range of a yuv420p
// output (the input's).
void WriteOutputFrames(const torch::Tensor& y, const torch::Tensor& dst, FrameFormat format,
                       const InputLayout& colour = InputLayout());

}  // namespace framemill
