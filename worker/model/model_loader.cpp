#include "worker/model/model_loader.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/model_format.h"
#include "worker/model/pt2_model.h"
#include "worker/model/torchscript_model.h"

namespace framemill {

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

namespace {

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

}  // namespace framemill
