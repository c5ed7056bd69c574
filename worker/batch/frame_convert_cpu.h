// The frame conversions of frame_convert.h written as loops for a CPU worker: one pass over the
// frames each way, where the tensor code (the same on CUDA and CPU) takes six to ten passes,
// each allocating a tensor the size of the batch. On a CPU the tensor code cost a yuv420p
// identity job 25 ms a 768x576 frame in and 14 ms out; these loops do the same arithmetic in
// the same order (float, no fused multiply-add), so their results equal the tensor code's
// (tests/unit/frame_convert_test.cpp compares them value for value).
//
// Each returns false, doing nothing, for what it does not cover (then the tensor code runs):
// tensors not on the CPU, a model type other than float32 in (bfloat16 is converted from the
// float result), rgb48.
#pragma once

#include <array>
#include <vector>

#include <torch/torch.h>

#include "worker/batch/frame_convert.h"

namespace framemill {

// ToModelInput for rgb24 and yuv420p frames on the CPU: `*out` gets [b, 3, h, w] of `dtype`,
// channels-last.
bool ToModelInputOnCpu(const torch::Tensor& frames, const InputLayout& in,
                       torch::ScalarType dtype, torch::Tensor* out);

// WriteOutputFrames for rgb24 and yuv420p on the CPU; `y` of any float type.
bool WriteOutputFramesOnCpu(const torch::Tensor& y, const torch::Tensor& dst, FrameFormat format,
                            const InputLayout& colour);

// yuv420p -> RGB in [0, 1] as a matrix by column, the one both codes use: Y's weights for R, G,
// B, then U's, then V's, then the offsets (each colour is Y my + U mu + V mv + offset).
std::array<std::vector<float>, 4> YuvToRgbColumns(const InputLayout& in);

// The tensor code alone, on any device (what ToModelInput and WriteOutputFrames run where the
// loops above do not): for tests that compare the two.
torch::Tensor ToModelInputAsTensorOps(const torch::Tensor& frames, const InputLayout& in,
                                      torch::ScalarType dtype);
void WriteOutputFramesAsTensorOps(const torch::Tensor& y, const torch::Tensor& dst,
                                  FrameFormat format, const InputLayout& colour);

}  // namespace framemill
