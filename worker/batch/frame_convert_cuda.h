// The CUDA worker's frame conversions (frame_convert_kernels.h: one kernel each way, the tensor
// code's values) behind frame_convert.h's functions, as frame_convert_cpu.h is for the CPU.
//
// Each returns false, doing nothing, for what it does not cover (then the tensor code runs):
// tensors not on a CUDA device, a build without the kernels (LibTorch without CUDA, or no nvcc),
// FRAMEMILL_WORKER_CONVERSION=tensor, rgb24 and rgb48 input, rgb48 output, odd frame sizes for
// yuv420p.
#pragma once

#include <torch/torch.h>

#include "worker/batch/frame_convert.h"

namespace framemill {

// Whether this build has the kernels (and the environment does not turn them off).
bool CudaConversionKernels();

// ToModelInput for yuv420p frames of even size on a CUDA device: `*out` gets [b, 3, h, w] of
// `dtype` (float32, float16 or bfloat16), channels-last, on the frames' current stream.
bool ToModelInputOnCuda(const torch::Tensor& frames, const InputLayout& in, torch::ScalarType dtype,
                        torch::Tensor* out);

// WriteOutputFrames for rgb24, and yuv420p of even size, on a CUDA device; `y` of float32,
// float16 or bfloat16, any strides.
bool WriteOutputFramesOnCuda(const torch::Tensor& y, const torch::Tensor& dst, FrameFormat format,
                             const InputLayout& colour);

}  // namespace framemill
