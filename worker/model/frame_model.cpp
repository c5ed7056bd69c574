#include "worker/model/frame_model.h"

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <istream>
#include <sstream>
#include <streambuf>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include <torch/cuda.h>
#ifdef FRAMEMILL_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif
#include <c10/util/Exception.h>
#include <torch/script.h>

#include "common/log_lines.h"
#include "common/model_format.h"
#include "worker/model/pt2_model.h"

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

namespace {

class TorchScriptModel : public FrameModel {
 public:
  TorchScriptModel(torch::jit::Module module, torch::Device device, torch::ScalarType dtype)
      : module_(std::move(module)), device_(device), dtype_(dtype) {}

  Result<torch::Tensor> Run(const torch::Tensor& batch) override {
    try {
      torch::jit::IValue out = module_.forward({batch});
      if (!out.isTensor()) {
        return Status(StatusCode::kModelInvalid,
                      "model returned " + out.tagKind() + ", expected a Tensor");
      }
      return out.toTensor();
    } catch (const std::exception& e) {
      return ModelRaised(e);
    }
  }

  const torch::Device& device() const override { return device_; }
  torch::ScalarType dtype() const override { return dtype_; }

 private:
  torch::jit::Module module_;
  torch::Device device_;
  torch::ScalarType dtype_;
};

// A read-only stream over bytes in memory, seekable (the TorchScript reader seeks), without
// copying them.
class MemoryStreamBuf : public std::streambuf {
 public:
  MemoryStreamBuf(char* data, size_t size) { setg(data, data, data + size); }

 protected:
  pos_type seekoff(off_type off, std::ios_base::seekdir dir,
                   std::ios_base::openmode which) override {
    if ((which & std::ios_base::in) == 0) return pos_type(off_type(-1));
    char* base = dir == std::ios_base::beg ? eback() : dir == std::ios_base::cur ? gptr() : egptr();
    if (off < eback() - base || off > egptr() - base) return pos_type(off_type(-1));
    setg(eback(), base + off, egptr());
    return pos_type(gptr() - eback());
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
    return seekoff(off_type(pos), std::ios_base::beg, which);
  }
};

}  // namespace

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

Status PrepareDevice(const torch::Device& device) {
  torch::NoGradGuard no_grad;
  std::vector<torch::ScalarType> dtypes = {torch::kFloat32};
  if (device.is_cuda()) dtypes = {torch::kFloat32, torch::kFloat16, torch::kBFloat16};
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
  }
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

Result<std::string> ReadWholeFile(int fd, const std::string& label) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Status(StatusCode::kModelInvalid, label + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status(StatusCode::kModelInvalid, label + ": not a regular file");
  }
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(st.st_size));
  } catch (const std::exception&) {
    return Status(StatusCode::kModelInvalid,
                  label + ": " + std::to_string(st.st_size) + " bytes do not fit in memory");
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pread(fd, &bytes[done], bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status(StatusCode::kModelInvalid, label + ": " + std::strerror(errno));
    if (n == 0) return Status(StatusCode::kModelInvalid, label + ": shrank while being read");
    done += static_cast<size_t>(n);
  }
  return bytes;
}

bool FreezesModel(ModelOptimization optimization, const torch::Device& device) {
  switch (optimization) {
    case ModelOptimization::kOn:
      return true;
    case ModelOptimization::kOff:
      return false;
    case ModelOptimization::kAuto:
      return device.is_cuda();
  }
  return false;
}

namespace {

Result<std::unique_ptr<FrameModel>> TorchScriptFromBytes(std::string& bytes,
                                                         const std::string& label,
                                                         const torch::Device& device,
                                                         torch::ScalarType dtype,
                                                         ModelOptimization optimization) {
  try {
    MemoryStreamBuf buf(bytes.data(), bytes.size());
    std::istream in(&buf);
    torch::jit::Module m = torch::jit::load(in, device);
    m.eval();
    if (dtype != torch::kFloat32) m.to(dtype);
    if (FreezesModel(optimization, device)) {
      // Parameters become constants of the graph, which optimize_for_inference then folds
      // (convolution + bias + add + ReLU into one cuDNN call on CUDA): `restore` fp16 at 1080p
      // on an H200 ran 97.7 fps frozen against 63.6 as loaded (docs/gpu.md).
      try {
        torch::jit::Module frozen = torch::jit::freeze(m);
        m = torch::jit::optimize_for_inference(frozen);
      } catch (const std::exception& e) {
        LogWarn(label + ": cannot be frozen for inference (" + FirstLine(e.what()) +
                "); running it as it is (model_optimization off hides this warning)");
      }
    }
    return std::unique_ptr<FrameModel>(new TorchScriptModel(std::move(m), device, dtype));
  } catch (const std::exception& e) {
    return Status(StatusCode::kModelInvalid,
                  label + ": not a loadable TorchScript model: " + FirstLine(e.what()));
  }
}

// Opens `path` read-only and calls `load` with the descriptor.
template <typename Load>
Result<std::unique_ptr<FrameModel>> WithOpenFile(const std::string& path, Load load) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(StatusCode::kModelInvalid, path + ": " + std::strerror(errno));
  Result<std::unique_ptr<FrameModel>> model = load(fd);
  ::close(fd);
  return model;
}

}  // namespace

Result<std::unique_ptr<FrameModel>> LoadTorchScriptModel(int fd, const std::string& label,
                                                         const torch::Device& device,
                                                         torch::ScalarType dtype,
                                                         ModelOptimization optimization) {
  Result<std::string> bytes = ReadWholeFile(fd, label);
  if (!bytes.ok()) return bytes.status();
  return TorchScriptFromBytes(*bytes, label, device, dtype, optimization);
}

Result<std::unique_ptr<FrameModel>> LoadFrameModel(int fd, const std::string& label,
                                                   const torch::Device& device,
                                                   torch::ScalarType dtype,
                                                   ModelOptimization optimization) {
  Result<std::string> bytes = ReadWholeFile(fd, label);
  if (!bytes.ok()) return bytes.status();
  Result<ModelFormat> format = DetectModelFormat(*bytes);
  if (!format.ok()) return Status(StatusCode::kModelInvalid, label + ": " + format.status().message());
  if (*format == ModelFormat::kPt2) return LoadPt2Model(*bytes, label, device, dtype);
  return TorchScriptFromBytes(*bytes, label, device, dtype, optimization);
}

Result<std::unique_ptr<FrameModel>> LoadFrameModel(const std::string& path,
                                                   const torch::Device& device,
                                                   torch::ScalarType dtype,
                                                   ModelOptimization optimization) {
  return WithOpenFile(path, [&](int fd) {
    return LoadFrameModel(fd, path, device, dtype, optimization);
  });
}

Result<std::unique_ptr<FrameModel>> LoadTorchScriptModel(const std::string& path,
                                                         const torch::Device& device,
                                                         torch::ScalarType dtype,
                                                         ModelOptimization optimization) {
  return WithOpenFile(path, [&](int fd) {
    return LoadTorchScriptModel(fd, path, device, dtype, optimization);
  });
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
