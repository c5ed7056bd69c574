#include "worker/frame_convert.h"

namespace framemill {
namespace {

torch::Tensor YuvToRgb(const torch::Tensor& frames, const InputLayout& in) {
  const int64_t b = frames.size(0), h = in.height, w = in.width;
  const int64_t cw = (w + 1) / 2, ch = (h + 1) / 2;
  torch::Tensor y = frames.narrow(1, 0, h * w).view({b, 1, h, w}).to(torch::kFloat32);
  torch::Tensor uv = frames.narrow(1, h * w, 2 * cw * ch).view({b, 2, ch, cw}).to(torch::kFloat32);
  // Each chroma sample sits at the centre of its 2x2 luma block; an odd frame's last chroma
  // column (row) covers one luma column (row), cut off after upsampling. Bicubic, as swscale's
  // bicubic: bilinear put 3% of values 8 or more levels away from ffmpeg's conversion.
  namespace F = torch::nn::functional;
  uv = F::interpolate(uv, F::InterpolateFuncOptions()
                              .size(std::vector<int64_t>{2 * ch, 2 * cw})
                              .mode(torch::kBicubic)
                              .align_corners(false))
           .narrow(2, 0, h)
           .narrow(3, 0, w);
  // Normalised luma in [0, 1] and chroma in [-0.5, 0.5].
  if (in.full_range) {
    y.div_(255.0);
    uv.sub_(128.0).div_(255.0);
  } else {
    y.sub_(16.0).div_(219.0);
    uv.sub_(128.0).div_(224.0);
  }
  double kr = 0, kb = 0;
  MatrixWeights(in.matrix, &kr, &kb);
  const double kg = 1.0 - kr - kb;
  torch::Tensor cb = uv.narrow(1, 0, 1), cr = uv.narrow(1, 1, 1);
  torch::Tensor r = y + cr * (2.0 * (1.0 - kr));
  torch::Tensor g = y - cb * (2.0 * kb * (1.0 - kb) / kg) - cr * (2.0 * kr * (1.0 - kr) / kg);
  torch::Tensor bl = y + cb * (2.0 * (1.0 - kb));
  return torch::cat({r, g, bl}, 1).clamp_(0.0, 1.0);
}

}  // namespace

// Both layouts hand the model a channels-last tensor (NCHW shape, NHWC strides): convolutions
// run on it natively (cuDNN's fp16 kernels), while a plain NCHW input made the `heavy` model on
// an H200 1.55x slower and reserve 10.7 GB instead of 4.3.
torch::Tensor ToModelInput(const torch::Tensor& frames, const InputLayout& in,
                           torch::ScalarType dtype) {
  if (in.format == FrameFormat::kYuv420p) {
    return YuvToRgb(frames, in)
        .to(dtype, /*non_blocking=*/false, /*copy=*/false, torch::MemoryFormat::ChannelsLast);
  }
  return frames.view({frames.size(0), in.height, in.width, 3})
      .permute({0, 3, 1, 2})
      .to(dtype)
      .div_(255.0);
}

}  // namespace framemill
