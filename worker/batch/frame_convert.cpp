#include "worker/batch/frame_convert.h"

#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "worker/batch/frame_convert_cpu.h"
#include "worker/batch/frame_convert_cuda.h"

namespace framemill {
namespace {

constexpr double k16BitMax = 65535.0;

// `values` as a float tensor of `shape` on `device`, made once per device and values, so that a
// batch costs no copy to the device. Never freed: device memory freed after the CUDA runtime has
// shut down at exit is an error, and there are a handful of these per process.
const torch::Tensor& DeviceConstant(std::vector<float> values, torch::IntArrayRef shape,
                                    const torch::Device& device) {
  struct Constants {
    Mutex mu;
    std::map<std::pair<std::string, std::vector<float>>, torch::Tensor> made GUARDED_BY(mu);
  };
  static auto* const constants = new Constants();
  MutexLock lock(&constants->mu);
  auto key = std::make_pair(device.str(), std::move(values));
  auto it = constants->made.find(key);
  if (it == constants->made.end()) {
    torch::Tensor t = torch::tensor(key.second, torch::kFloat32).view(shape).to(device);
    it = constants->made.emplace(std::move(key), std::move(t)).first;
  }
  return it->second;
}

}  // namespace

// The conversion of raw levels (Y, U, V) to RGB in [0, 1]: each colour is
// m[c][0] Y + m[c][1] U + m[c][2] V + offset[c]. From R = Y' + 2(1-kr) V',
// G = Y' - (2 kb (1-kb) U' + 2 kr (1-kr) V') / kg, B = Y' + 2(1-kb) U', where Y' = (Y-16)/219 and
// U', V' = (U-128)/224, (V-128)/224 in limited range, and Y/255, (U-128)/255, (V-128)/255 in full
// range. Returned by column: Y's weights for R, G, B, then U's, then V's, then the offsets.
std::array<std::vector<float>, 4> YuvToRgbColumns(const InputLayout& in) {
  double kr = 0, kb = 0;
  MatrixWeights(in.matrix, &kr, &kb);
  const double kg = 1.0 - kr - kb;
  const double sy = in.full_range ? 1.0 / 255.0 : 1.0 / 219.0;
  const double sc = in.full_range ? 1.0 / 255.0 : 1.0 / 224.0;
  const double y0 = in.full_range ? 0.0 : 16.0, c0 = 128.0;
  const double m[3][3] = {{sy, 0.0, 2.0 * (1.0 - kr) * sc},
                          {sy, -2.0 * kb * (1.0 - kb) / kg * sc, -2.0 * kr * (1.0 - kr) / kg * sc},
                          {sy, 2.0 * (1.0 - kb) * sc, 0.0}};
  std::array<std::vector<float>, 4> columns;
  for (const auto& row : m) {
    for (int k = 0; k < 3; ++k) columns[k].push_back(static_cast<float>(row[k]));
    columns[3].push_back(static_cast<float>(-(row[0] * y0 + row[1] * c0 + row[2] * c0)));
  }
  return columns;
}

namespace {

// yuv420p frames -> RGB [b, 3, h, w] of `dtype` in [0, 1], channels-last. This runs on the
// device's compute stream between model calls, so it takes two passes over the frames: each
// 2x2 block's chroma part of the three colours (with the offsets) is worked out first, at a
// quarter of the samples; then each pixel is its luma times Y's weights plus its block's part,
// computed in float and stored as `dtype` in NHWC memory (the layout the model is handed); then
// the clamp, exact in any float type.
torch::Tensor YuvToRgb(const torch::Tensor& frames, const InputLayout& in,
                       torch::ScalarType dtype) {
  const int64_t b = frames.size(0), h = in.height, w = in.width;
  const int64_t cw = (w + 1) / 2, ch = (h + 1) / 2;
  const torch::Device device = frames.device();
  std::array<std::vector<float>, 4> columns = YuvToRgbColumns(in);
  const torch::Tensor& my = DeviceConstant(std::move(columns[0]), {3}, device);
  const torch::Tensor& mu = DeviceConstant(std::move(columns[1]), {3}, device);
  const torch::Tensor& mv = DeviceConstant(std::move(columns[2]), {3}, device);
  const torch::Tensor& offset = DeviceConstant(std::move(columns[3]), {3}, device);
  // Each chroma sample covers its 2x2 luma block (an odd frame's last column or row covers one),
  // as the decoder's swscale conversion does (neighbour chroma): the encoder's 2x2 average then
  // gives the stored chroma back, where an interpolated chroma lost 5-7 dB of chroma PSNR in an
  // identity round trip (docs/ARCHITECTURE.md, "Colour path").
  torch::Tensor chroma = frames.narrow(1, h * w, 2 * ch * cw).view({b, 2, ch, cw, 1});
  torch::Tensor part = torch::addcmul(offset, chroma.select(1, 0), mu);  // [b, ch, cw, 3]
  part.addcmul_(chroma.select(1, 1), mv);
  torch::Tensor luma = frames.narrow(1, 0, h * w);
  torch::Tensor rgb;  // [b, h, w, 3]
  if (h == 2 * ch && w == 2 * cw) {
    // Stored as `dtype` by the kernel itself on a GPU; on the CPU LibTorch 1.13 cannot store a
    // float result as another type, so it is stored as float and converted.
    const bool store_as_dtype = dtype == torch::kFloat32 || !device.is_cpu();
    rgb = torch::empty({b, h, w, 3},
                       frames.options().dtype(store_as_dtype ? dtype : torch::kFloat32));
    torch::Tensor blocks = rgb.view({b, ch, 2, cw, 2, 3});
    torch::addcmul_out(blocks, part.view({b, ch, 1, cw, 1, 3}), luma.view({b, ch, 2, cw, 2, 1}),
                       my);
    rgb = rgb.to(dtype);
  } else {
    // An odd size: the parts spread over a frame padded to whole blocks, then the luma added to
    // the frame's own pixels (two passes; such frames are rare).
    torch::Tensor padded = torch::empty({b, 2 * ch, 2 * cw, 3}, part.options());
    padded.view({b, ch, 2, cw, 2, 3})
        .copy_(part.view({b, ch, 1, cw, 1, 3}).expand({b, ch, 2, cw, 2, 3}));
    torch::Tensor picture = padded.narrow(1, 0, h).narrow(2, 0, w);
    picture.addcmul_(luma.view({b, h, w, 1}), my);
    rgb = picture.to(dtype).contiguous();
  }
  rgb = rgb.permute({0, 3, 1, 2});
  return in.unclamped ? rgb : rgb.clamp_(0.0, 1.0);
}

// RGB [b, 3, h, w] (any float type, unclamped) -> yuv420p levels into `dst` [b, FrameBytes]
// uint8: the inverse of ColourMatrix's conversion, in float, chroma averaged over each 2x2 block
// (over the pixels it has at an odd edge) as the encoder's swscale `area` does.
void RgbToYuv420(const torch::Tensor& y, const torch::Tensor& dst, const InputLayout& colour) {
  double kr = 0, kb = 0;
  MatrixWeights(colour.matrix, &kr, &kb);
  const double kg = 1.0 - kr - kb;
  const double ys = colour.full_range ? 255.0 : 219.0, y0 = colour.full_range ? 0.0 : 16.0;
  const double cs = colour.full_range ? 255.0 : 224.0;
  const int64_t b = y.size(0), h = y.size(2), w = y.size(3);
  const int64_t cw = (w + 1) / 2, ch = (h + 1) / 2;
  const torch::Tensor rgb = y.to(torch::kFloat32);
  const torch::Tensor r = rgb.select(1, 0), g = rgb.select(1, 1), bl = rgb.select(1, 2);
  const torch::Tensor luma = r * kr + g * kg + bl * kb;  // [b, h, w], 0..1
  // Levels + 0.5, so that the copy into uint8 (which truncates) rounds half up.
  auto store = [&](torch::Tensor levels, int64_t offset, int64_t rows, int64_t cols) {
    dst.narrow(1, offset, rows * cols).view({b, rows, cols}).copy_(levels.clamp_(0.0, 255.0));
  };
  auto chroma = [&](const torch::Tensor& colour_minus_luma, double k) {
    torch::Tensor c = colour_minus_luma.mul(cs / (2.0 * (1.0 - k))).unsqueeze(1);
    c = torch::avg_pool2d(c, {2, 2}, {2, 2}, {0, 0}, /*ceil_mode=*/true).squeeze(1);
    return c.add_(128.5);
  };
  store(luma * ys + (y0 + 0.5), 0, h, w);
  store(chroma(bl - luma, kb), h * w, ch, cw);
  store(chroma(r - luma, kr), h * w + ch * cw, ch, cw);
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
torch::Tensor ToModelInputAsTensorOps(const torch::Tensor& frames, const InputLayout& in,
                                      torch::ScalarType dtype) {
  const int64_t b = frames.size(0);
  switch (in.format) {
    case FrameFormat::kYuv420p:
      return YuvToRgb(frames, in, dtype);
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

torch::Tensor ToModelInput(const torch::Tensor& frames, const InputLayout& in,
                           torch::ScalarType dtype) {
  torch::Tensor out;
  if (ToModelInputOnCpu(frames, in, dtype, &out)) return out;
  if (ToModelInputOnCuda(frames, in, dtype, &out)) return out;
  return ToModelInputAsTensorOps(frames, in, dtype);
}

torch::ScalarType OutputElementType(FrameFormat format) {
  return format == FrameFormat::kRgb48 ? torch::kInt16 : torch::kUInt8;
}

std::vector<int64_t> OutputFramesShape(FrameFormat format, int64_t b, int64_t h, int64_t w) {
  if (format == FrameFormat::kYuv420p) {
    return {b, static_cast<int64_t>(FrameBytes(format, static_cast<uint32_t>(w),
                                               static_cast<uint32_t>(h)))};
  }
  return {b, h, w, 3};
}

void WriteOutputFramesAsTensorOps(const torch::Tensor& y, const torch::Tensor& dst,
                                  FrameFormat format, const InputLayout& colour) {
  if (format == FrameFormat::kYuv420p) {
    RgbToYuv420(y, dst, colour);
    return;
  }
  torch::Tensor to = dst.permute({0, 3, 1, 2});  // NCHW sizes over the frames' NHWC bytes
  if (format == FrameFormat::kRgb48) {
    // clamp out of place: the model may hand back a tensor it still owns (its input, a buffer).
    torch::Tensor v = torch::clamp(y.to(torch::kFloat32), 0.0, 1.0).mul_(k16BitMax).round_();
    to.copy_(v.sub_((v > 32767.0).to(torch::kFloat32).mul_(65536.0)));
    return;
  }
  // 8 bits: y clamped in its own type (exact), then y * 255 + 0.5 in float whatever y's type
  // (the constants' float type promoting it), in the frames' layout; the copy into uint8
  // truncates, so the level is y * 255 rounded half up.
  const torch::Device device = y.device();
  torch::Tensor v =
      torch::empty(dst.sizes(), y.options().dtype(torch::kFloat32)).permute({0, 3, 1, 2});
  torch::addcmul_out(v, DeviceConstant({0.5f}, {1}, device), torch::clamp(y, 0.0, 1.0),
                     DeviceConstant({255.0f}, {1}, device));
  to.copy_(v);
}

void WriteOutputFrames(const torch::Tensor& y, const torch::Tensor& dst, FrameFormat format,
                       const InputLayout& colour) {
  if (WriteOutputFramesOnCpu(y, dst, format, colour)) return;
  if (WriteOutputFramesOnCuda(y, dst, format, colour)) return;
  WriteOutputFramesAsTensorOps(y, dst, format, colour);
}

}  // namespace framemill
