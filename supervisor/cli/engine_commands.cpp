#include "supervisor/cli/engine_commands.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/checked_file.h"
#include "common/model_format.h"
#include "common/sha256.h"
#include "supervisor/engines/engine_build.h"
#include "supervisor/engines/engine_cache.h"
#include "supervisor/report/job_result.h"

namespace framemill {
namespace {

int Fail(const std::string& why) {
  std::fprintf(stderr, "framemill: %s\n", why.c_str());
  return kExitFailed;
}

bool ParseShape(const std::string& text, int* w, int* h) {
  char x = 0;
  std::istringstream in(text);
  return (in >> *w >> x >> *h) && x == 'x' && in.peek() == EOF && *w > 0 && *h > 0 && *w <= 16384 &&
         *h <= 16384;
}

// The key's lines but the first and the model's, joined: "shape 1920x1080, batch 4, ...".
std::string KeySummary(const std::string& key_text) {
  std::istringstream in(key_text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("framemill engine", 0) == 0 || line.rfind("model ", 0) == 0) continue;
    out += (out.empty() ? "" : ", ") + line;
  }
  return out;
}

}  // namespace

int ModelCompileCommand(const CompileArgs& a, const Config& config) {
  int w = 0, h = 0;
  if (!ParseShape(a.shape, &w, &h))
    return Fail("--shape " + a.shape + ": give WxH, e.g. 1920x1080");
  std::optional<Precision> precision = ParsePrecision(a.precision);
  if (!precision || *precision == Precision::kBf16) {
    return Fail("--precision " + a.precision + ": engines are built at fp16 or fp32");
  }
  std::optional<DeviceSetting> device = ParseDevice(a.device);
  if (!device || device->kind != DeviceKind::kCuda) {
    return Fail("--device " + a.device + ": engines are built for a GPU (cuda or cuda:N)");
  }
  if (a.batch < 1 || a.batch > 64) return Fail("--batch " + std::to_string(a.batch) + ": 1..64");
  Result<UniqueFd> fd = OpenCheckedFile(CheckedKind::kModel, a.model, {});
  if (!fd.ok()) return Fail(fd.status().message());
  std::ifstream in(FdPath(fd->get()), std::ios::binary);
  std::stringstream read;
  read << in.rdbuf();
  const std::string bytes = read.str();
  Result<ModelFormat> format = DetectModelFormat(bytes);
  if (!format.ok()) return Fail(a.model + ": " + format.status().message());
  if (*format != ModelFormat::kTorchScript) {
    return Fail(a.model + ": a package already; engines are compiled from TorchScript models");
  }
  const int gpu = device->index < 0 ? 0 : device->index;
  Result<EngineKey> key = EngineKeyFor(Sha256Hex(bytes), w, h, a.batch, *precision, gpu);
  if (!key.ok()) return Fail("no engine can be built here: " + key.status().message());
  const std::string cache = EngineCacheDir();
  if (cache.empty()) return Fail("no cache folder (set HOME, XDG_CACHE_HOME or CACHE_DIRECTORY)");
  UniqueFd package;
  int scale = 1;
  Result<std::optional<CachedEngine>> found = FindEngine(cache, *key, &package, &scale);
  if (found.ok() && found->has_value()) {
    std::printf("engine %s is built already (%s): %s\n", (*found)->id.c_str(),
                key->Describe().c_str(), (*found)->folder.c_str());
    return kExitOk;
  }
  EngineBuildRequest request;
  request.model_fd = fd->get();
  request.model_label = a.model;
  request.key = *key;
  request.gpu_index = gpu;
  request.sandbox = config.worker_sandbox.value_or(WorkerSandbox::kAuto);
  Result<CachedEngine> built = BuildEngine(cache, request);
  if (!built.ok()) return Fail(built.status().message());
  std::printf("engine %s built in %.1f s (%s): %s\n", built->id.c_str(), built->build_seconds,
              key->Describe().c_str(), built->folder.c_str());
  return kExitOk;
}

int ModelEnginesCommand(bool clear, const Config&) {
  const std::string cache = EngineCacheDir();
  if (cache.empty()) return Fail("no cache folder (set HOME, XDG_CACHE_HOME or CACHE_DIRECTORY)");
  if (clear) {
    Result<int> removed = ClearEngines(cache);
    if (!removed.ok()) return Fail(removed.status().message());
    std::printf("removed %d engine%s from %s\n", *removed, *removed == 1 ? "" : "s", cache.c_str());
    return kExitOk;
  }
  const std::vector<CachedEngine> list = ListEngines(cache);
  if (list.empty()) std::printf("no compiled engines in %s\n", cache.c_str());
  for (const CachedEngine& e : list) {
    if (e.sha256.empty()) {
      std::printf("%s\t(no readable manifest: `framemill model engines --clear` removes it)\n",
                  e.id.c_str());
      continue;
    }
    std::printf("%s\t%s\t%.1f MB\tbuilt %s in %.0f s\n", e.id.c_str(),
                KeySummary(e.key_text).c_str(), e.bytes / 1e6, e.built_at.c_str(), e.build_seconds);
  }
  return kExitOk;
}

}  // namespace framemill
