// The CUDA worker's conversion kernels (worker/batch/frame_convert_cuda.h) against the tensor code
// on the same GPU, value for value: yuv420p in, every matrix and range, clamped and not, to each
// float type; rgb24 and yuv420p out from each float type, channels-last and contiguous, values
// outside [0, 1], a chunk's short last batch. (LibTorch's own CUDA addcmul decides which of the
// kernels' two multiply-add forms runs; the other is not exercised on that build.) A file of its
// own, skipped where there is no GPU or the build has no kernels
// (ctest runs the worker's unit tests a process per file: every case of a file skips together).
#include "doctest_with_torch.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <torch/cuda.h>

#include "skip.h"
#include "worker/batch/frame_convert.h"
#include "worker/batch/frame_convert_cpu.h"
#include "worker/batch/frame_convert_cuda.h"

using namespace framemill;

namespace {

torch::Device RequireKernels() {
  const char* env = std::getenv("FRAMEMILL_TEST_DEVICE");
  if (env == nullptr || std::strncmp(env, "cuda", 4) != 0 || !torch::cuda::is_available()) {
    unit::SkipTest("needs FRAMEMILL_TEST_DEVICE=cuda and a GPU");
  }
  if (!CudaConversionKernels()) {
    unit::SkipTest("this build has no CUDA conversion kernels (LibTorch without CUDA, or no nvcc)");
  }
  return torch::Device(torch::kCUDA, 0);
}

InputLayout Yuv(int64_t h, int64_t w, YuvMatrix m, bool full, bool unclamped) {
  InputLayout in;
  in.format = FrameFormat::kYuv420p;
  in.height = h;
  in.width = w;
  in.matrix = m;
  in.full_range = full;
  in.unclamped = unclamped;
  return in;
}

std::vector<InputLayout> Layouts() {
  std::vector<InputLayout> all;
  for (YuvMatrix m : {YuvMatrix::kBt601, YuvMatrix::kBt709, YuvMatrix::kBt2020}) {
    for (bool full : {false, true}) {
      for (bool unclamped : {false, true}) all.push_back(Yuv(48, 64, m, full, unclamped));
    }
  }
  all.push_back(Yuv(1080, 1920, YuvMatrix::kBt709, false, true));  // the jobs' usual frame
  return all;
}

}  // namespace

TEST_CASE("conversion kernels: yuv420p in gives the tensor code's values, to every float type") {
  const torch::Device device = RequireKernels();
  torch::InferenceMode guard;
  for (const InputLayout& in : Layouts()) {
    INFO(in.width << "x" << in.height << ", matrix " << static_cast<int>(in.matrix)
                  << (in.full_range ? ", full" : ", limited")
                  << (in.unclamped ? ", unclamped" : ""));
    const int64_t b = 3;
    torch::Tensor f = torch::randint(0, 256, {b, in.FrameBytes()}, torch::kUInt8).to(device);
    for (torch::ScalarType t : {torch::kFloat32, torch::kFloat16, torch::kBFloat16}) {
      INFO("type " << c10::toString(t));
      torch::Tensor kernel;
      REQUIRE(ToModelInputOnCuda(f, in, t, &kernel));
      const torch::Tensor ops = ToModelInputAsTensorOps(f, in, t);
      CHECK((kernel.scalar_type() == t));
      CHECK(kernel.sizes() == ops.sizes());
      CHECK(kernel.is_contiguous(torch::MemoryFormat::ChannelsLast));
      CHECK(torch::equal(kernel, ops));
      CHECK(torch::equal(ToModelInput(f, in, t), ops));  // what the worker calls takes the kernel
    }
  }
  // What the kernels do not cover is left to the tensor code.
  torch::Tensor out;
  const InputLayout odd = Yuv(37, 130, YuvMatrix::kBt709, false, false);
  CHECK_FALSE(ToModelInputOnCuda(torch::zeros({1, odd.FrameBytes()}, torch::kUInt8).to(device), odd,
                                 torch::kFloat16, &out));
  const InputLayout on_cpu = Yuv(48, 64, YuvMatrix::kBt709, false, false);
  CHECK_FALSE(ToModelInputOnCuda(torch::zeros({1, on_cpu.FrameBytes()}, torch::kUInt8), on_cpu,
                                 torch::kFloat16, &out));
}

TEST_CASE("conversion kernels: rgb24 and yuv420p out give the tensor code's levels") {
  const torch::Device device = RequireKernels();
  torch::InferenceMode guard;
  for (InputLayout in : Layouts()) {
    if (in.unclamped) continue;  // (the output ignores it)
    for (FrameFormat format : {FrameFormat::kYuv420p, FrameFormat::kRgb24}) {
      in.format = format;
      INFO(in.width << "x" << in.height << ", format " << static_cast<int>(format) << ", matrix "
                    << static_cast<int>(in.matrix) << (in.full_range ? ", full" : ", limited"));
      const int64_t b = 2;
      torch::Tensor y =
          torch::rand({b, in.height, in.width, 3}, torch::kFloat32).mul_(1.4).sub_(0.2).to(device);
      for (const torch::Tensor& model_out :
           {y.permute({0, 3, 1, 2}), y.permute({0, 3, 1, 2}).contiguous(),
            y.permute({0, 3, 1, 2}).to(torch::kFloat16),
            y.permute({0, 3, 1, 2}).contiguous().to(torch::kBFloat16)}) {
        INFO("type " << c10::toString(model_out.scalar_type())
                     << (model_out.is_contiguous() ? ", contiguous" : ", channels-last"));
        const std::vector<int64_t> shape = OutputFramesShape(format, b, in.height, in.width);
        auto opts = torch::TensorOptions().device(device).dtype(torch::kUInt8);
        torch::Tensor by_kernel = torch::full(shape, 7, opts);
        torch::Tensor by_ops = torch::full(shape, 9, opts);
        REQUIRE(WriteOutputFramesOnCuda(model_out, by_kernel, format, in));
        WriteOutputFramesAsTensorOps(model_out, by_ops, format, in);
        CHECK(torch::equal(by_kernel, by_ops));
        // What the worker calls takes the kernel; a short last batch, as the runner narrows it.
        torch::Tensor by_worker = torch::full(shape, 5, opts);
        WriteOutputFrames(model_out, by_worker, format, in);
        CHECK(torch::equal(by_worker, by_ops));
        torch::Tensor short_batch = torch::full(shape, 3, opts);
        REQUIRE(WriteOutputFramesOnCuda(model_out.narrow(0, 0, 1), short_batch.narrow(0, 0, 1),
                                        format, in));
        CHECK(torch::equal(short_batch.narrow(0, 0, 1), by_ops.narrow(0, 0, 1)));
        CHECK(short_batch.narrow(0, 1, 1).eq(3).all().item<bool>());
      }
    }
  }
  // A NaN pixel reads as black, as the CPU loops read it (the tensor code leaves it undefined).
  torch::Tensor nan =
      torch::full({1, 3, 2, 2}, std::nanf(""), torch::TensorOptions().device(device));
  torch::Tensor rgb =
      torch::full({1, 2, 2, 3}, 7, torch::TensorOptions().device(device).dtype(torch::kUInt8));
  REQUIRE(WriteOutputFramesOnCuda(nan, rgb, FrameFormat::kRgb24, InputLayout()));
  CHECK(rgb.max().item<int>() == 0);
}
