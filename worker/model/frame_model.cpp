#include "worker/model/frame_model.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <torch/cuda.h>
#ifdef FRAMEMILL_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif
#include <c10/util/Exception.h>
#include <torch/script.h>
#include "common/clock.h"

namespace framemill {

std::string FirstLine(const std::string& what) {
  size_t nl = what.find('\n');
  return nl == std::string::npos ? what : what.substr(0, nl);
}

std::string ModelErrorLine(const std::string& what) {
  std::istringstream in(what);
  std::string line;
  while (std::getline(in, line)) {
    // "<Name>Error: message", the name one word.
    size_t at = line.find("Error: ");
    if (at != std::string::npos && at > 0 && line.find(' ') > at) return line;
  }
  return FirstLine(what);
}

Status ModelRaised(const std::exception& e) {
  const std::string what = e.what();
  const bool oom = dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr ||
                   what.find("CUDA out of memory") != std::string::npos ||
                   what.find("can't allocate memory") != std::string::npos;
  return Status(oom ? StatusCode::kOutOfMemory : StatusCode::kModelInvalid,
                "model raised: " + ModelErrorLine(what));
}

void ReleaseCachedMemory(const torch::Device& device) {
#ifdef FRAMEMILL_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#else
  (void)device;
#endif
}

Result<torch::Device> ResolveDevice(const DeviceSetting& setting) {
  const std::string device = Name(setting);
  try {
    if (setting.kind == DeviceKind::kCpu) return torch::Device(torch::kCPU);
    bool cuda = torch::cuda::is_available();
    if (setting.kind == DeviceKind::kAuto) {
      return cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    }
    if (!cuda) {
      std::string why;
#ifdef FRAMEMILL_WITH_CUDA
      // The driver's own word (no driver, no device, not permitted, ...).
      try {
        c10::cuda::device_count_ensure_non_zero();
      } catch (const std::exception& e) {
        why = " (" + FirstLine(e.what()) + ")";
      }
#endif
      // A worker pinned to a GPU (the job's `gpus`) sees that one only: a wrong index shows here.
      const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      std::string pinned = visible != nullptr
                               ? std::string("; it was given CUDA_VISIBLE_DEVICES=") + visible +
                                     " (the job's gpus): is there such a GPU?"
                               : std::string();
      return Status(StatusCode::kInvalidJob,
                    "device \"" + device +
                        "\" asked for, but CUDA is not available to this "
                        "worker (no GPU, or a LibTorch built without CUDA)" +
                        why + pinned);
    }
    torch::Device d(torch::kCUDA, static_cast<c10::DeviceIndex>(std::max(0, setting.index)));
    if (d.index() >= static_cast<int>(torch::cuda::device_count())) {
      return Status(StatusCode::kInvalidJob, "device \"" + device + "\": only " +
                                                 std::to_string(torch::cuda::device_count()) +
                                                 " CUDA devices");
    }
    return d;
  } catch (const std::exception& e) {
    return Status(StatusCode::kInvalidJob, "device \"" + device + "\": " + FirstLine(e.what()));
  }
}

Status PrepareDevice(const torch::Device& device, std::string* timings) {
  torch::NoGradGuard no_grad;
  std::vector<torch::ScalarType> dtypes = {torch::kFloat32};
  if (device.is_cuda()) dtypes = {torch::kFloat32, torch::kFloat16, torch::kBFloat16};
  uint64_t lap = MonotonicMs();
  std::string said;
  auto note = [&](const std::string& what) {
    const uint64_t now = MonotonicMs();
    said += (said.empty() ? "" : ", ") + what + " " + std::to_string(now - lap) + " ms";
    lap = now;
  };
  try {
    (void)torch::zeros({1}, torch::TensorOptions().device(device)).item<float>();  // the context
    note("context");
  } catch (const std::exception& e) {
    return Status(StatusCode::kModelInvalid,
                  "preparing " + device.str() + ": " + FirstLine(e.what()));
  }
  Status first_error;
  for (torch::ScalarType dtype : dtypes) {
    // Each precision on its own: a GPU without bf16 kernels still gets the others ready.
    try {
      const auto options = torch::TensorOptions().device(device).dtype(dtype);
      torch::Tensor x =
          torch::ones({1, 8, 16, 16}, options).contiguous(torch::MemoryFormat::ChannelsLast);
      torch::Tensor w =
          torch::ones({8, 8, 3, 3}, options).contiguous(torch::MemoryFormat::ChannelsLast);
      torch::Tensor y = torch::conv2d(x, w, {}, 1, 1);
      torch::Tensor m = torch::matmul(torch::ones({16, 16}, options), torch::ones({16, 16}, options));
      (void)(y.sum() + m.sum()).item<float>();  // waits for the device
    } catch (const std::exception& e) {
      if (first_error.ok()) {
        first_error = Status(StatusCode::kModelInvalid, "preparing " + device.str() + " in " +
                                                            c10::toString(dtype) + ": " +
                                                            FirstLine(e.what()));
      }
    }
    note(c10::toString(dtype));
  }
  if (timings != nullptr) *timings = said;
  return first_error;
}

Result<torch::ScalarType> ResolvePrecision(Precision precision, const torch::Device& device) {
  if (precision == Precision::kFp32) return torch::kFloat32;
  if (precision == Precision::kBf16) return torch::kBFloat16;
  if (precision == Precision::kFp16) {
    if (!device.is_cuda()) {
      return Status(StatusCode::kInvalidJob,
                    "precision fp16 needs a CUDA device (this worker "
                    "runs on " +
                        device.str() + "; use bf16 or fp32)");
    }
    return torch::kFloat16;
  }
  return Status(StatusCode::kInvalidJob, "precision must be fp32, fp16 or bf16");
}

Result<std::pair<int64_t, int64_t>> ProbeOutputSize(FrameModel& model, int64_t width,
                                                    int64_t height, int64_t batch) {
  torch::InferenceMode guard;
  torch::Tensor x = torch::rand({batch, 3, height, width},
                                torch::TensorOptions().device(model.device()).dtype(model.dtype()));
  Result<torch::Tensor> y = model.Run(x);
  if (!y.ok()) return y.status();
  const torch::Tensor& t = *y;
  if (t.dim() != 4 || t.size(0) != batch || t.size(1) != 3) {
    return Status(StatusCode::kModelInvalid, "model output has shape " + c10::str(t.sizes()) +
                                                 " for input " + c10::str(x.sizes()) +
                                                 "; expected [" + std::to_string(batch) +
                                                 ", 3, H, W]");
  }
  if (!t.is_floating_point()) {
    return Status(StatusCode::kModelInvalid, "model output is not floating point");
  }
  return std::make_pair(t.size(3), t.size(2));
}

}  // namespace framemill
