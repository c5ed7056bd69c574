#include "worker/batch/frame_convert_cuda.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "common/env_knobs.h"
#include "worker/batch/frame_convert_cpu.h"

#ifdef FRAMEMILL_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "worker/batch/frame_convert_kernels.h"
#endif

namespace framemill {

bool CudaConversionKernels() {
#ifdef FRAMEMILL_WITH_CUDA_KERNELS
  static const bool on = [] {
    const std::optional<std::string>& v = Knob(EnvKnob::kWorkerConversion);
    return !v || *v != "tensor";
  }();
  return on;
#else
  return false;
#endif
}

#ifdef FRAMEMILL_WITH_CUDA_KERNELS
namespace {

// Whether LibTorch's CUDA addcmul (self + t1 * t2) rounds once, as a fused multiply-add, as
// nvcc compiled it: asked of LibTorch itself, once, on the device, with values whose product
// rounds differently ((1 + 2^-12)^2 - 1 is 2^-11 + 2^-24 exactly, 2^-11 rounded twice).
bool TorchCudaFusesMultiplyAdd(const torch::Device& device) {
  static const bool fused = [&] {
    torch::InferenceMode guard;
    const float a = 1.0f + 1.0f / 4096.0f;
    auto opts = torch::TensorOptions().device(device).dtype(torch::kFloat32);
    torch::Tensor r = torch::addcmul(torch::full({67}, -1.0f, opts), torch::full({67}, a, opts),
                                     torch::full({67}, a, opts));
    return r[0].item<float>() != 1.0f / 2048.0f;
  }();
  return fused;
}

std::optional<KernelFloat> KernelType(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32:
      return KernelFloat::kFloat32;
    case torch::kFloat16:
      return KernelFloat::kFloat16;
    case torch::kBFloat16:
      return KernelFloat::kBFloat16;
    default:
      return std::nullopt;
  }
}

cudaStream_t StreamOf(const torch::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

}  // namespace
#endif

bool ToModelInputOnCuda(const torch::Tensor& frames, const InputLayout& in, torch::ScalarType dtype,
                        torch::Tensor* out) {
#ifdef FRAMEMILL_WITH_CUDA_KERNELS
  if (!CudaConversionKernels() || !frames.is_cuda() || frames.scalar_type() != torch::kUInt8 ||
      !frames.is_contiguous() || frames.dim() != 2 || in.format != FrameFormat::kYuv420p ||
      in.height % 2 != 0 || in.width % 2 != 0 || frames.size(1) != in.FrameBytes()) {
    return false;
  }
  const std::optional<KernelFloat> type = KernelType(dtype);
  if (!type) return false;
  const c10::cuda::CUDAGuard on_device(frames.device());  // the launch goes to the frames' GPU
  const int64_t b = frames.size(0), h = in.height, w = in.width;
  torch::Tensor rgb = torch::empty({b, h, w, 3}, frames.options().dtype(dtype));
  YuvToRgbArgs a;
  a.src = frames.data_ptr<uint8_t>();
  a.b = b;
  a.h = h;
  a.w = w;
  a.frame_bytes = in.FrameBytes();
  const std::array<std::vector<float>, 4> m = YuvToRgbColumns(in);
  for (int p = 0; p < 3; ++p) {
    a.my[p] = m[0][p];
    a.mu[p] = m[1][p];
    a.mv[p] = m[2][p];
    a.offset[p] = m[3][p];
  }
  a.unclamped = in.unclamped;
  a.fused = TorchCudaFusesMultiplyAdd(frames.device());
  a.type = *type;
  a.dst = rgb.data_ptr();
  C10_CUDA_CHECK(LaunchYuv420ToRgb(a, StreamOf(frames)));
  *out = rgb.permute({0, 3, 1, 2});
  return true;
#else
  (void)frames, (void)in, (void)dtype, (void)out;
  return false;
#endif
}

bool WriteOutputFramesOnCuda(const torch::Tensor& y, const torch::Tensor& dst, FrameFormat format,
                             const InputLayout& colour) {
#ifdef FRAMEMILL_WITH_CUDA_KERNELS
  if (!CudaConversionKernels() || !y.is_cuda() || !dst.is_cuda() || y.device() != dst.device() ||
      !dst.is_contiguous() || dst.scalar_type() != torch::kUInt8 || y.dim() != 4 ||
      y.size(1) != 3) {
    return false;
  }
  const std::optional<KernelFloat> type = KernelType(y.scalar_type());
  if (!type) return false;
  const int64_t b = y.size(0), h = y.size(2), w = y.size(3);
  const bool yuv = format == FrameFormat::kYuv420p;
  if (!yuv && format != FrameFormat::kRgb24) return false;
  if (yuv && (h % 2 != 0 || w % 2 != 0)) return false;
  const int64_t frame_bytes =
      static_cast<int64_t>(FrameBytes(format, static_cast<uint32_t>(w), static_cast<uint32_t>(h)));
  if (dst.numel() != b * frame_bytes) return false;
  const c10::cuda::CUDAGuard on_device(y.device());
  RgbOutArgs a;
  a.src = y.data_ptr();
  a.type = *type;
  a.s0 = y.stride(0);
  a.s1 = y.stride(1);
  a.s2 = y.stride(2);
  a.s3 = y.stride(3);
  a.b = b;
  a.h = h;
  a.w = w;
  a.dst = dst.data_ptr<uint8_t>();
  if (!yuv) {
    a.fused = TorchCudaFusesMultiplyAdd(y.device());
    C10_CUDA_CHECK(LaunchRgbToRgb24(a, StreamOf(y)));
    return true;
  }
  // The scalars as the tensor code's float kernels take them: rounded to float once.
  double kr = 0, kb = 0;
  MatrixWeights(colour.matrix, &kr, &kb);
  const double cs = colour.full_range ? 255.0 : 224.0;
  a.kr = static_cast<float>(kr);
  a.kg = static_cast<float>(1.0 - kr - kb);
  a.kb = static_cast<float>(kb);
  a.ys = static_cast<float>(colour.full_range ? 255.0 : 219.0);
  a.y_add = static_cast<float>((colour.full_range ? 0.0 : 16.0) + 0.5);
  a.u_scale = static_cast<float>(cs / (2.0 * (1.0 - kb)));
  a.v_scale = static_cast<float>(cs / (2.0 * (1.0 - kr)));
  C10_CUDA_CHECK(LaunchRgbToYuv420(a, StreamOf(y)));
  return true;
#else
  (void)y, (void)dst, (void)format, (void)colour;
  return false;
#endif
}

}  // namespace framemill
