#include "worker/model/pt2_model.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

#include <torch/version.h>

#include "common/file_util.h"

#ifdef FRAMEMILL_HAVE_AOTI
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#endif

namespace framemill {

#ifndef FRAMEMILL_HAVE_AOTI

bool Pt2Supported() { return false; }

Result<std::unique_ptr<FrameModel>> LoadPt2Model(const std::string&, const std::string& label,
                                                 const torch::Device&, torch::ScalarType) {
  return Status(StatusCode::kModelInvalid,
                label + ": a .pt2 package, and this framemill-worker was built against a LibTorch "
                        "without AOTInductor packages (" TORCH_VERSION
                        "; they need 2.6 or later): use a TorchScript model, or build framemill "
                        "against a newer LibTorch");
}

#else

namespace {

class Pt2Model : public FrameModel {
 public:
  Pt2Model(std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader, torch::Device device,
           torch::ScalarType dtype, torch::MemoryFormat input_format,
           std::vector<int64_t> input_shape)
      : loader_(std::move(loader)),
        device_(device),
        dtype_(dtype),
        input_format_(input_format),
        input_shape_(std::move(input_shape)) {}

  Result<torch::Tensor> Run(const torch::Tensor& batch) override {
    // A package made for one shape reads past an input of another (on CUDA an illegal memory
    // access, which ends the process): refused here, where the shape is known.
    if (!input_shape_.empty() && !batch.sizes().equals(input_shape_)) {
      return Status(StatusCode::kModelInvalid,
                    "the package takes input of shape " + c10::str(c10::IntArrayRef(input_shape_)) +
                        " only; got " + c10::str(batch.sizes()));
    }
    try {
      // The package indexes its input with the strides of the example it was traced with, and
      // checks nothing: another layout would give wrong pixels, not an error. A no-op when the
      // layouts agree (the worker's tensors are channels-last, as export-pt2.py traces).
      // On CUDA the package runs on the current stream, as TorchScript does.
      std::vector<at::Tensor> out = loader_->run({batch.contiguous(input_format_)});
      if (out.size() != 1) {
        return Status(StatusCode::kModelInvalid,
                      "package returned " + std::to_string(out.size()) + " tensors, expected 1");
      }
      return out[0];
    } catch (const std::exception& e) {
      // Out of memory included (frame_model.h ModelRaised): the worker's fallback takes it.
      return ModelRaised(e);
    }
  }

  const torch::Device& device() const override { return device_; }
  torch::ScalarType dtype() const override { return dtype_; }

 private:
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
  torch::Device device_;
  torch::ScalarType dtype_;
  torch::MemoryFormat input_format_;
  std::vector<int64_t> input_shape_;  // a package made for one shape: that shape; else empty
};

// "4x3x1080x1920" (export-pt2.py's framemill_input_shape) as sizes; empty when malformed.
std::vector<int64_t> ParseShape(const std::string& text) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('x', start);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(start, end - start);
    char* stop = nullptr;
    const long long n = std::strtoll(part.c_str(), &stop, 10);
    if (part.empty() || *stop != '\0' || n < 1) return {};
    dims.push_back(static_cast<int64_t>(n));
    start = end + 1;
  }
  return dims.size() == 4 ? dims : std::vector<int64_t>{};
}

// Writes `bytes` to a new private file under $TMPDIR (or /tmp) and returns its name.
Result<std::string> WritePrivateCopy(const std::string& bytes, const std::string& label) {
  std::string path = TemporaryDirectory() + "/framemill-model-XXXXXX.pt2";
  int fd = ::mkstemps(&path[0], 4);
  if (fd < 0) {
    return Status(StatusCode::kModelInvalid,
                  label + ": cannot make a temporary copy to load (" + path + "): " +
                      std::strerror(errno));
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(path.c_str());
      return Status(StatusCode::kModelInvalid,
                    label + ": cannot write its temporary copy " + path + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return path;
}

}  // namespace

bool Pt2Supported() { return true; }

Result<std::unique_ptr<FrameModel>> LoadPt2Model(const std::string& bytes, const std::string& label,
                                                 const torch::Device& device,
                                                 torch::ScalarType dtype) {
  Result<std::string> copy = WritePrivateCopy(bytes, label);
  if (!copy.ok()) return copy.status();
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader;
  std::string built_for;
  // A package from scripts/export-pt2.py says in its metadata that it was traced with a
  // channels-last example; one without the key was traced as torch.export's examples usually
  // are, contiguous (NCHW).
  torch::MemoryFormat input_format = torch::MemoryFormat::Contiguous;
  std::vector<int64_t> input_shape;
  try {
    loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(
        *copy, "model", /*run_single_threaded=*/false, /*num_runners=*/1,
        device.is_cuda() ? device.index() : static_cast<c10::DeviceIndex>(-1));
    auto meta = loader->get_metadata();
    auto key = meta.find("AOTI_DEVICE_KEY");
    if (key != meta.end()) built_for = key->second;
    auto layout = meta.find("framemill_input_memory_format");
    if (layout != meta.end() && layout->second == "channels_last") {
      input_format = torch::MemoryFormat::ChannelsLast;
    }
    auto shape = meta.find("framemill_input_shape");
    if (shape != meta.end()) input_shape = ParseShape(shape->second);
  } catch (const std::exception& e) {
    ::unlink(copy->c_str());
    return Status(StatusCode::kModelInvalid,
                  label + ": not a loadable .pt2 package: " + FirstLine(e.what()));
  }
  ::unlink(copy->c_str());
  if (!built_for.empty() && built_for != c10::DeviceTypeName(device.type(), /*lower_case=*/true)) {
    return Status(StatusCode::kModelInvalid, label + ": a .pt2 package compiled for " + built_for +
                                               "; this job runs on " + device.str() +
                                               " (export it again for that device)");
  }
  return std::unique_ptr<FrameModel>(new Pt2Model(std::move(loader), device, dtype, input_format,
                                                  std::move(input_shape)));
}

#endif

}  // namespace framemill
