#include "worker/batch/frame_convert_cpu.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <ATen/Parallel.h>

namespace framemill {
namespace {

// A float level (already + 0.5) into uint8 as the tensor code's clamp to 0..255 and its copy
// into uint8 (which truncates) give it; NaN, which that copy leaves undefined, as 0.
inline uint8_t Level(float v) {
  if (!(v > 0.0f)) return 0;
  if (v >= 255.0f) return 255;
  return static_cast<uint8_t>(v);
}

// Whether LibTorch's CPU addcmul (self + t1 * t2) rounds once, as a fused multiply-add: its
// vector kernels (AVX2, AVX512) are compiled for FMA and the compiler contracts the expression,
// its default kernels are not. Asked of LibTorch itself, once, with values whose product rounds
// differently: (1 + 2^-12)^2 - 1 is 2^-11 + 2^-24 exactly, 2^-11 rounded twice.
bool TorchFusesMultiplyAdd() {
  static const bool fused = [] {
    torch::InferenceMode guard;
    const float a = 1.0f + 1.0f / 4096.0f;
    torch::Tensor r = torch::addcmul(torch::full({67}, -1.0f), torch::full({67}, a),
                                     torch::full({67}, a));
    return r[0].item<float>() != 1.0f / 2048.0f;
  }();
  return fused;
}

// a * b + c, rounded once (kFused, in a function compiled for FMA) or twice.
template <bool kFused>
[[gnu::always_inline]] inline float MulAdd(float a, float b, float c) {
  if constexpr (kFused) {
    return __builtin_fmaf(a, b, c);
  } else {
    return a * b + c;
  }
}

// Rows per task: a few thousand pixels, so that small frames are not split into slivers.
int64_t RowGrain(int64_t width) { return std::max<int64_t>(1, 4096 / std::max<int64_t>(width, 1)); }

void Rgb24ToFloat(const uint8_t* src, int64_t b, int64_t h, int64_t w, int64_t frame_bytes,
                  float* dst) {
  at::parallel_for(0, b * h, RowGrain(w), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const uint8_t* s = src + (row / h) * frame_bytes + (row % h) * w * 3;
      float* d = dst + row * w * 3;
      for (int64_t k = 0; k < w * 3; ++k) d[k] = static_cast<float>(s[k]) / 255.0f;
    }
  });
}

struct YuvRows {
  const uint8_t* src;
  int64_t h, w, frame_bytes;
  const float *my, *mu, *mv, *offset;
  bool clamp;
  float* dst;
};

// As YuvToRgb's tensor code: part = offset + U * mu, part += V * mv, rgb = part + Y * my.
template <bool kFused>
[[gnu::always_inline]] inline void YuvToFloatRows(const YuvRows& a, int64_t begin, int64_t end) {
  const int64_t h = a.h, w = a.w, cw = (w + 1) / 2, ch = (h + 1) / 2;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t r = row % h;
    const uint8_t* frame = a.src + (row / h) * a.frame_bytes;
    const uint8_t* luma = frame + r * w;
    const uint8_t* u_row = frame + h * w + (r / 2) * cw;
    const uint8_t* v_row = u_row + ch * cw;
    float* d = a.dst + row * w * 3;
    for (int64_t c = 0; c < w; ++c) {
      const float y = luma[c], u = u_row[c / 2], v = v_row[c / 2];
      for (int p = 0; p < 3; ++p) {
        float part = MulAdd<kFused>(u, a.mu[p], a.offset[p]);
        part = MulAdd<kFused>(v, a.mv[p], part);
        float x = MulAdd<kFused>(y, a.my[p], part);
        if (a.clamp) x = std::min(std::max(x, 0.0f), 1.0f);
        d[c * 3 + p] = x;
      }
    }
  }
}

[[gnu::target("fma")]] void YuvToFloatRowsFused(const YuvRows& a, int64_t begin, int64_t end) {
  YuvToFloatRows<true>(a, begin, end);
}

void YuvToFloatRowsPlain(const YuvRows& a, int64_t begin, int64_t end) {
  YuvToFloatRows<false>(a, begin, end);
}

void Yuv420ToFloat(const uint8_t* src, int64_t b, int64_t h, int64_t w, int64_t frame_bytes,
                   const InputLayout& in, float* dst) {
  const std::array<std::vector<float>, 4> m = YuvToRgbColumns(in);
  const YuvRows rows{src,         h,           w,           frame_bytes, m[0].data(),
                     m[1].data(), m[2].data(), m[3].data(), !in.unclamped, dst};
  const bool fused = TorchFusesMultiplyAdd();
  at::parallel_for(0, b * h, RowGrain(w), [&](int64_t begin, int64_t end) {
    fused ? YuvToFloatRowsFused(rows, begin, end) : YuvToFloatRowsPlain(rows, begin, end);
  });
}

// The model's output through its strides: frame i, colour p, row r, column c.
struct FloatPicture {
  const float* data;
  int64_t s0, s1, s2, s3;
  float at(int64_t i, int p, int64_t r, int64_t c) const {
    return data[i * s0 + p * s1 + r * s2 + c * s3];
  }
};

// As WriteOutputFrames' 8-bit code: 0.5 + clamp(y, 0, 1) * 255 (addcmul), truncated.
template <bool kFused>
[[gnu::always_inline]] inline void FloatToRgb24Rows(const FloatPicture& y, int64_t h, int64_t w,
                                                    uint8_t* dst, int64_t begin, int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    const int64_t i = row / h, r = row % h;
    uint8_t* d = dst + row * w * 3;
    for (int64_t c = 0; c < w; ++c) {
      for (int p = 0; p < 3; ++p) {
        // Clamped so that NaN becomes 0 (as Level makes it): 0.5..255.5, truncated without a test.
        float v = y.at(i, p, r, c);
        v = v > 0.0f ? v : 0.0f;
        v = v < 1.0f ? v : 1.0f;
        d[c * 3 + p] = static_cast<uint8_t>(static_cast<int>(MulAdd<kFused>(v, 255.0f, 0.5f)));
      }
    }
  }
}

[[gnu::target("fma")]] void FloatToRgb24RowsFused(const FloatPicture& y, int64_t h, int64_t w,
                                                  uint8_t* dst, int64_t begin, int64_t end) {
  FloatToRgb24Rows<true>(y, h, w, dst, begin, end);
}

void FloatToRgb24RowsPlain(const FloatPicture& y, int64_t h, int64_t w, uint8_t* dst,
                           int64_t begin, int64_t end) {
  FloatToRgb24Rows<false>(y, h, w, dst, begin, end);
}

void FloatToRgb24(const FloatPicture& y, int64_t b, int64_t h, int64_t w, uint8_t* dst) {
  const bool fused = TorchFusesMultiplyAdd();
  at::parallel_for(0, b * h, RowGrain(w), [&](int64_t begin, int64_t end) {
    fused ? FloatToRgb24RowsFused(y, h, w, dst, begin, end)
          : FloatToRgb24RowsPlain(y, h, w, dst, begin, end);
  });
}

// As RgbToYuv420's tensor code: luma = r kr + g kg + b kb; Y = luma ys + (y0 + 0.5); each chroma
// sample the mean, over its block's pixels in row order, of (colour - luma) times its scale,
// + 128.5; every level clamped to 0..255 and truncated.
void FloatToYuv420(const FloatPicture& y, int64_t b, int64_t h, int64_t w,
                   const InputLayout& colour, uint8_t* dst) {
  double kr = 0, kb = 0;
  MatrixWeights(colour.matrix, &kr, &kb);
  const double kg = 1.0 - kr - kb;
  const float fkr = static_cast<float>(kr), fkg = static_cast<float>(kg);
  const float fkb = static_cast<float>(kb);
  const float ys = static_cast<float>(colour.full_range ? 255.0 : 219.0);
  const float y_add = static_cast<float>((colour.full_range ? 0.0 : 16.0) + 0.5);
  const double cs = colour.full_range ? 255.0 : 224.0;
  const float u_scale = static_cast<float>(cs / (2.0 * (1.0 - kb)));
  const float v_scale = static_cast<float>(cs / (2.0 * (1.0 - kr)));
  const int64_t cw = (w + 1) / 2, ch = (h + 1) / 2;
  const int64_t frame_bytes = h * w + 2 * ch * cw;
  at::parallel_for(0, b * ch, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> luma(static_cast<size_t>(2 * w));
    for (int64_t block_row = begin; block_row < end; ++block_row) {
      const int64_t i = block_row / ch, br = block_row % ch;
      const int64_t rows = std::min<int64_t>(2, h - 2 * br);
      uint8_t* frame = dst + i * frame_bytes;
      for (int64_t k = 0; k < rows; ++k) {
        const int64_t r = 2 * br + k;
        float* l = luma.data() + k * w;
        uint8_t* out = frame + r * w;
        for (int64_t c = 0; c < w; ++c) {
          l[c] = y.at(i, 0, r, c) * fkr + y.at(i, 1, r, c) * fkg + y.at(i, 2, r, c) * fkb;
          out[c] = Level(l[c] * ys + y_add);
        }
      }
      uint8_t* u_out = frame + h * w + br * cw;
      uint8_t* v_out = u_out + ch * cw;
      for (int64_t bc = 0; bc < cw; ++bc) {
        const int64_t cols = std::min<int64_t>(2, w - 2 * bc);
        float u = 0.0f, v = 0.0f;
        for (int64_t k = 0; k < rows; ++k) {
          const int64_t r = 2 * br + k;
          for (int64_t j = 0; j < cols; ++j) {
            const int64_t c = 2 * bc + j;
            const float l = luma[static_cast<size_t>(k * w + c)];
            u += (y.at(i, 2, r, c) - l) * u_scale;
            v += (y.at(i, 0, r, c) - l) * v_scale;
          }
        }
        const float n = static_cast<float>(rows * cols);
        u_out[bc] = Level(u / n + 128.5f);
        v_out[bc] = Level(v / n + 128.5f);
      }
    }
  });
}

}  // namespace

bool ToModelInputOnCpu(const torch::Tensor& frames, const InputLayout& in,
                       torch::ScalarType dtype, torch::Tensor* out) {
  if (!frames.device().is_cpu() || frames.scalar_type() != torch::kUInt8 ||
      !frames.is_contiguous() || frames.dim() != 2) {
    return false;
  }
  // rgb24 in bfloat16 divides in its own type in the tensor code: left to it.
  const bool yuv = in.format == FrameFormat::kYuv420p;
  if (!yuv && in.format != FrameFormat::kRgb24) return false;
  if (dtype != torch::kFloat32 && !(yuv && dtype == torch::kBFloat16)) return false;
  const int64_t b = frames.size(0), h = in.height, w = in.width;
  if (frames.size(1) != in.FrameBytes()) return false;
  torch::Tensor rgb = torch::empty({b, h, w, 3}, frames.options().dtype(torch::kFloat32));
  if (yuv) {
    Yuv420ToFloat(frames.data_ptr<uint8_t>(), b, h, w, in.FrameBytes(), in,
                  rgb.data_ptr<float>());
  } else {
    Rgb24ToFloat(frames.data_ptr<uint8_t>(), b, h, w, in.FrameBytes(), rgb.data_ptr<float>());
  }
  // bfloat16: the float values rounded once, as the tensor code stores them on the CPU.
  torch::Tensor nchw = rgb.permute({0, 3, 1, 2});
  *out = dtype == torch::kFloat32 ? nchw : nchw.to(dtype);
  return true;
}

bool WriteOutputFramesOnCpu(const torch::Tensor& y, const torch::Tensor& dst, FrameFormat format,
                            const InputLayout& colour) {
  if (!y.device().is_cpu() || !dst.device().is_cpu() || !dst.is_contiguous() ||
      dst.scalar_type() != torch::kUInt8 || !torch::isFloatingType(y.scalar_type()) ||
      y.dim() != 4 || y.size(1) != 3) {
    return false;
  }
  if (format != FrameFormat::kRgb24 && format != FrameFormat::kYuv420p) return false;
  const int64_t b = y.size(0), h = y.size(2), w = y.size(3);
  const int64_t frame_bytes = static_cast<int64_t>(
      FrameBytes(format, static_cast<uint32_t>(w), static_cast<uint32_t>(h)));
  if (dst.numel() != b * frame_bytes) return false;
  // Exact from the 16-bit float types; the tensor code clamps them in their own type, also exact.
  const torch::Tensor f = y.to(torch::kFloat32);
  const FloatPicture picture{f.data_ptr<float>(), f.stride(0), f.stride(1), f.stride(2),
                             f.stride(3)};
  if (format == FrameFormat::kRgb24) {
    FloatToRgb24(picture, b, h, w, dst.data_ptr<uint8_t>());
  } else {
    FloatToYuv420(picture, b, h, w, colour, dst.data_ptr<uint8_t>());
  }
  return true;
}

}  // namespace framemill
