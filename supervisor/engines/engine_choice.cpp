#include "supervisor/engines/engine_choice.h"

#include <fstream>
#include <sstream>

#include "common/file_util.h"
#include "common/model_format.h"
#include "common/sha256.h"

namespace framemill {
namespace {

// Why an engine does not apply to the job's settings ("" when it does).
std::string NotApplicable(const JobSettings& s) {
  if (s.mode == JobMode::kFaces) return "face mode runs face crops";
  if (s.tile.mode != TileMode::kOff) return "the job's tile is \"" + Name(s.tile) + "\"";
  if (s.device.kind == DeviceKind::kCpu) return "the job runs on the CPU";
  if (!HostHasNvidiaDriver()) return "this machine has no NVIDIA GPU";
  if (s.precision != Precision::kFp16 && s.precision != Precision::kFp32) {
    return std::string("engines are built at fp16 or fp32, the job's precision is ") +
           Name(s.precision);
  }
  return "";
}

}  // namespace

EngineChoice ChooseEngine(const JobSettings& s, int model_fd, const std::string& model_label,
                          int width, int height, const std::string& cache_dir) {
  EngineChoice c;
  const std::string setting = std::string("model_optimization ") + Name(s.model_optimization);
  auto torchscript = [&](const std::string& why) {
    c.note = setting + ": running TorchScript: " + why;
    return std::move(c);
  };
  const std::string not_applicable = NotApplicable(s);
  if (!not_applicable.empty()) return torchscript(not_applicable);
  std::ifstream in(FdPath(model_fd), std::ios::binary);
  std::stringstream read;
  read << in.rdbuf();
  const std::string bytes = read.str();
  Result<ModelFormat> format = DetectModelFormat(bytes);
  if (format.ok() && *format == ModelFormat::kPt2) return torchscript("the model is a package");
  Result<EngineKey> key = EngineKeyFor(Sha256Hex(bytes), width, height, s.batch, s.precision,
                                       s.device.index < 0 ? 0 : s.device.index);
  if (!key.ok()) return torchscript(key.status().message());
  c.key = *key;
  if (cache_dir.empty()) return torchscript("no cache folder (no HOME, no $CACHE_DIRECTORY)");
  Result<std::optional<CachedEngine>> found = FindEngine(cache_dir, c.key, &c.package, &c.scale);
  if (!found.ok()) return torchscript(found.status().message());
  if (!found->has_value()) {
    c.buildable = true;
    c.build_command = "framemill model compile " + model_label + " --shape " +
                      std::to_string(width) + "x" + std::to_string(height) + " --batch " +
                      std::to_string(s.batch) + " --precision " + Name(s.precision);
    return torchscript("no compiled engine for " + c.key.Describe() + " in " + cache_dir);
  }
  c.note = setting + ": running the compiled engine " + (*found)->id + " (" + c.key.Describe() +
           ", built " + (*found)->built_at + ")";
  return c;
}

}  // namespace framemill
