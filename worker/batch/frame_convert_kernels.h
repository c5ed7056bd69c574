// The frame conversions of frame_convert.h as one CUDA kernel each way, for a CUDA worker: the
// tensor code runs six to twenty kernels a batch, each reading and writing the whole batch in
// float (RGB to yuv420p at 1080p, batch 4: 0.159 ms a frame in tensor ops on an H100), where one
// pass reads the frames once and writes them once. They do the tensor code's arithmetic in its
// order, rounding where it rounds (each tensor op rounds its result to float; an addcmul, a
// multiply-add, is one rounding or two as LibTorch's own kernels were compiled: `fused`), so
// their results equal the tensor code's on the same GPU (tests/unit/frame_convert_cuda_test.cpp).
//
// Plain types only: compiled by nvcc (frame_convert_kernels.cu) without LibTorch's headers; the
// worker calls them through frame_convert_cuda.h. Built only where LibTorch has CUDA and CMake
// finds nvcc.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace framemill {

enum class KernelFloat { kFloat32, kFloat16, kBFloat16 };

// yuv420p frames of even width and height -> RGB in `dst` ([b, h, w, 3] of `type`, the NHWC
// memory of the model's channels-last input): each colour is
// Y my + (V mv + (U mu + offset)), stored as `type`, then clamped to [0, 1] unless `unclamped`.
struct YuvToRgbArgs {
  const uint8_t* src = nullptr;  // b frames, `frame_bytes` apart
  int64_t b = 0, h = 0, w = 0, frame_bytes = 0;
  float my[3] = {}, mu[3] = {}, mv[3] = {}, offset[3] = {};
  bool unclamped = false;
  bool fused = false;  // each multiply-add rounds once
  KernelFloat type = KernelFloat::kFloat32;
  void* dst = nullptr;
};
cudaError_t LaunchYuv420ToRgb(const YuvToRgbArgs& a, cudaStream_t stream);

// The model's output [b, 3, h, w] of `type` through its strides (in elements) -> frames in `dst`
// (b frames of FrameBytes, contiguous).
struct RgbOutArgs {
  const void* src = nullptr;
  KernelFloat type = KernelFloat::kFloat32;
  int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t b = 0, h = 0, w = 0;
  uint8_t* dst = nullptr;
  bool fused = false;  // rgb24: the multiply-add rounds once
  // yuv420p: luma = r kr + g kg + b kb; Y = luma ys + y_add; U, V: the mean over each 2x2 block
  // of (b - luma) u_scale, (r - luma) v_scale, + 128.5.
  float kr = 0, kg = 0, kb = 0, ys = 0, y_add = 0, u_scale = 0, v_scale = 0;
};
// 8-bit RGB: clamp to [0, 1] in its own type, x 255 + 0.5, truncated; NaN as 0.
cudaError_t LaunchRgbToRgb24(const RgbOutArgs& a, cudaStream_t stream);
// yuv420p, even width and height; every level clamped to 0..255 and truncated, NaN as 0.
cudaError_t LaunchRgbToYuv420(const RgbOutArgs& a, cudaStream_t stream);

}  // namespace framemill
