#include "worker/model/torchscript_model.h"

#include <istream>
#include <streambuf>

#include <torch/script.h>

#include "common/log_lines.h"

namespace framemill {
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

bool FreezesModel(ModelOptimization optimization, const torch::Device& device) {
  switch (optimization) {
    case ModelOptimization::kOn:
      return true;
    case ModelOptimization::kOff:
      return false;
    case ModelOptimization::kAuto:
    case ModelOptimization::kCompile:  // the engine, where there is one, is not TorchScript
      return device.is_cuda();
  }
  return false;
}

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

}  // namespace framemill
