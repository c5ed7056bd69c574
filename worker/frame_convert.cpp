#include "worker/frame_convert.h"

namespace framemill {
namespace {

constexpr double k16BitMax = 65535.0;

torch::Tensor YuvToRgb(const torch::Tensor& frames, const InputLayout& in) {
  const int64_t b = frames.size(0), h = in.height, w = in.width;
  const int64_t cw = (w + 1) / 2, ch = (h + 1) / 2;
  torch::Tensor y = frames.narrow(1, 0, h * w).view({b, 1, h, w}).to(torch::kFloat32);
  torch::Tensor uv = frames.narrow(1, h * w, 2 * cw * ch).view({b, 2, ch, cw}).to(torch::kFloat32);
  // Each chroma sample covers its 2x2 luma block (an odd frame's last column or row covers one),
  // as the decoder's swscale conversion does (neighbour chroma): the encoder's 2x2 average then
  // gives the stored chroma back, where an interpolated chroma lost 5-7 dB of chroma PSNR in an
  // identity round trip (docs/ARCHITECTURE.md, "Colour path").
  uv = uv.repeat_interleave(2, 2).repeat_interleave(2, 3).narrow(2, 0, h).narrow(3, 0, w);
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

// Little-endian uint16 samples (the arena's bytes, viewed as int16) -> float 0..65535.
torch::Tensor Uint16Values(const torch::Tensor& frames) {
  torch::Tensor v = frames.view(torch::kInt16).to(torch::kFloat32);
  return v.add_((v < 0).to(torch::kFloat32).mul_(65536.0));
}

}  // namespace

// Every layout hands the model a channels-last tensor (NCHW shape, NHWC strides): convolutions
// run on it natively (cuDNN's fp16 kernels), while a plain NCHW input made the `heavy` model on
// an H200 1.55x slower and reserve 10.7 GB instead of 4.3.
torch::Tensor ToModelInput(const torch::Tensor& frames, const InputLayout& in,
                           torch::ScalarType dtype) {
  const int64_t b = frames.size(0);
  switch (in.format) {
    case FrameFormat::kYuv420p:
      return YuvToRgb(frames, in)
          .to(dtype, /*non_blocking=*/false, /*copy=*/false, torch::MemoryFormat::ChannelsLast);
    case FrameFormat::kRgb48:
      return Uint16Values(frames)
          .view({b, in.height, in.width, 3})
          .permute({0, 3, 1, 2})
          .div_(k16BitMax)
          .to(dtype);
    case FrameFormat::kRgb24:
      break;
  }
  return frames.view({b, in.height, in.width, 3}).permute({0, 3, 1, 2}).to(dtype).div_(255.0);
}

torch::ScalarType OutputElementType(FrameFormat format) {
  return format == FrameFormat::kRgb48 ? torch::kInt16 : torch::kUInt8;
}

torch::Tensor ToOutputValues(const torch::Tensor& y, FrameFormat format) {
  // clamp out of place: the model may hand back a tensor it still owns (its input, a buffer).
  torch::Tensor v = torch::clamp(y.to(torch::kFloat32), 0.0, 1.0);
  if (format != FrameFormat::kRgb48) return v.mul_(255.0).round_();
  v.mul_(k16BitMax).round_();
  return v.sub_((v > 32767.0).to(torch::kFloat32).mul_(65536.0));
}

}  // namespace framemill
