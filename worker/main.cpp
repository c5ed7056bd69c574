// framemill-worker: one GPU (or CPU) worker process, started by the supervisor. Its command
// line is kUsage below (printed on a usage error): every flag it accepts is there.
//
// The supervisor hands the model over as an open descriptor (--model-fd); the label only names
// it in messages. The sandbox (worker/sandbox.h) goes on here, before the model is read: every
// descriptor above 2 is closed then, except those named by an argument ending in "-fd".
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/log_lines.h"
#include "worker/example_models.h"
#include "worker/fault_injection.h"
#include "worker/model_import/catalog.h"
#include "worker/sandbox.h"
#include "worker/worker_loop.h"

namespace {

constexpr const char* kUsage =
    "usage: framemill-worker --control PATH --channel K --wake-fd N --model-fd FD\n"
    "                        [--model-label TEXT] --device DEV [--precision fp32|fp16|bf16]\n"
    "                        [--optimize auto|on|off] [--tile off|auto|SIZE:OVERLAP]\n"
    "                        [--probe-size N|WxH] [--probe-batch B]\n"
    "                        [--cudnn-autotune on|off]\n"
    "                        [--log-level L]\n"
    "                        [--sandbox required|auto|off]\n"
    "       framemill-worker ... --model PATH ...  (tools: the worker opens the file itself,\n"
    "                                               instead of --model-fd)\n"
    "       framemill-worker --export-model NAME PATH [--target FILE]\n"
    "       framemill-worker --list-models\n"
    "       framemill-worker --import-model NAME PATH --packages DIR\n"
    "       framemill-worker --list-importable\n";

int Usage() {
  std::fputs(kUsage, stderr);
  return framemill::kWorkerExitUsage;
}

// One side of --probe-size: 1..2^20 pixels (a model card's bound).
std::optional<long> ParseProbeSide(const std::string& text) {
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || *end != '\0' || n < 1 || n > (1L << 20)) {
    return std::nullopt;
  }
  return n;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A descriptor number given on the command line, which must be open.
std::optional<int> InheritedFd(const std::string& text) {
  char* end = nullptr;
  long fd = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || fd < 3 || fd > 65535) return std::nullopt;
  int flags = ::fcntl(static_cast<int>(fd), F_GETFD);
  if (flags < 0) return std::nullopt;
  // Nothing this process could start may inherit it.
  ::fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC);
  return static_cast<int>(fd);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace framemill;
  const uint64_t main_ms = MonotonicMs();
  std::vector<std::string> a(argv + 1, argv + argc);
  if ((a.size() == 3 || (a.size() == 5 && a[3] == "--target")) && a[0] == "--export-model") {
    Status s = ExportExampleModel(a[1], a[2], a.size() == 5 ? a[4] : "");
    if (!s.ok()) {
      std::fprintf(stderr, "framemill: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("wrote model %s to %s\n", a[1].c_str(), a[2].c_str());
    return 0;
  }
  if (a.size() == 1 && a[0] == "--list-models") {
    for (const std::string& n : ExampleModelNames()) std::printf("%s\n", n.c_str());
    return 0;
  }
  if (a.size() == 5 && a[0] == "--import-model" && a[3] == "--packages") {
    Status s = ImportCatalogModel(a[1], a[2], a[4]);
    if (!s.ok()) {
      std::fprintf(stderr, "framemill: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("imported %s to %s (card: %s.json)\n", a[1].c_str(), a[2].c_str(), a[2].c_str());
    return 0;
  }
  if (a.size() == 1 && a[0] == "--list-importable") {
    for (const CatalogEntry& e : ModelCatalog()) {
      std::printf("%-26s x%d  %-12s npm:%s@%s  %s\n", e.name.c_str(), e.scale, e.licence.c_str(),
                  e.package.c_str(), e.version.c_str(), e.network.c_str());
    }
    return 0;
  }
  WorkerArgs args;
  args.main_ms = main_ms;
  std::string level = "info";
  std::string model_path;
  bool have_device = false;
  SandboxOptions sandbox;
  if (a.size() % 2 != 0) return Usage();
  for (size_t i = 0; i + 1 < a.size(); i += 2) {
    const std::string& key = a[i];
    const std::string& value = a[i + 1];
    if (key == "--control") {
      args.control = value;
    } else if (key == "--channel") {
      args.channel = std::atoi(value.c_str());
    } else if (key == "--wake-fd") {
      std::optional<int> fd = InheritedFd(value);
      if (!fd) {
        std::fprintf(stderr, "framemill-worker: --wake-fd %s is not an open descriptor\n",
                     value.c_str());
        return kWorkerExitUsage;
      }
      args.wake_fd = *fd;
    } else if (key == "--model") {
      model_path = value;
    } else if (key == "--model-fd") {
      std::optional<int> fd = InheritedFd(value);
      if (!fd) {
        std::fprintf(stderr, "framemill-worker: --model-fd %s is not an open descriptor\n",
                     value.c_str());
        return kWorkerExitUsage;
      }
      args.model_fd = *fd;
    } else if (key == "--model-label") {
      args.model_label = value;
    } else if (key == "--device") {
      std::optional<DeviceSetting> device = ParseDevice(value);
      if (!device) return Usage();
      args.device = *device;
      have_device = true;
    } else if (key == "--precision") {
      std::optional<Precision> precision = ParsePrecision(value);
      if (!precision) return Usage();
      args.precision = *precision;
    } else if (key == "--optimize") {
      std::optional<ModelOptimization> mode = ParseModelOptimization(value);
      if (!mode) return Usage();
      args.optimization = *mode;
    } else if (key == "--tile") {
      std::optional<TileSetting> tile = ParseTileSetting(value);
      if (!tile) return Usage();
      args.tile = *tile;
    } else if (key == "--probe-size") {
      // N (a square) or WxH.
      const size_t x = value.find('x');
      std::optional<long> w = ParseProbeSide(value.substr(0, x));
      std::optional<long> h = x == std::string::npos ? w : ParseProbeSide(value.substr(x + 1));
      if (!w || !h) return Usage();
      args.probe_width = static_cast<int>(*w);
      args.probe_height = static_cast<int>(*h);
    } else if (key == "--probe-batch") {
      char* end = nullptr;
      const long n = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || n < 1 || n > framemill::kMaxBatch) return Usage();
      args.probe_batch = static_cast<int>(n);
    } else if (key == "--cudnn-autotune") {
      if (value != "on" && value != "off") return Usage();
      args.cudnn_autotune = value == "on";
    } else if (key == "--log-level") {
      level = value;
    } else if (key == "--sandbox") {
      std::optional<WorkerSandbox> mode = ParseWorkerSandbox(value);
      if (!mode) return Usage();
      sandbox.mode = *mode;
    } else {
      std::fprintf(stderr, "framemill-worker: unknown argument %s\n", key.c_str());
      return kWorkerExitUsage;
    }
    // Descriptors handed over by the supervisor survive the sandbox's clean-up.
    if (EndsWith(key, "-fd")) {
      std::optional<int> fd = InheritedFd(value);
      if (fd) sandbox.keep_fds.push_back(*fd);
    }
  }
  if (!model_path.empty() && args.model_fd < 0) {
    args.model_fd = ::open(model_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (args.model_fd < 0) {
      std::fprintf(stderr, "framemill-worker: %s: %s\n", model_path.c_str(), std::strerror(errno));
      return kWorkerExitModel;
    }
    sandbox.keep_fds.push_back(args.model_fd);
    if (args.model_label.empty()) args.model_label = model_path;
  }
  if (args.model_label.empty()) args.model_label = "the model";
  if (args.control.empty() || args.channel < 0 || args.wake_fd < 0 || args.model_fd < 0 ||
      !have_device) {
    return Usage();
  }
  InitLogging("worker" + std::to_string(args.channel), level);

  if (sandbox.mode != WorkerSandbox::kOff) {
    // The driver's JIT cache in the home directory is out of reach: see worker/sandbox.h.
    ::setenv("CUDA_CACHE_DISABLE", "1", 1);
  }
  sandbox.control = args.control;
  // A worker that may drive a GPU (worker/sandbox.h: CUDA and Landlock's file rules).
  sandbox.cuda = args.device.kind != DeviceKind::kCpu && HostHasNvidiaDriver();
  // Test hook: a fault that fires once marks it by creating a file (worker/fault_injection.h),
  // which the sandbox must then allow in that file's directory. Never set in production.
  if (const char* spec = std::getenv(kFaultEnvVar)) {
    Result<Fault> fault = ParseFault(spec);
    if (fault.ok() && !fault->once_path.empty()) {
      // The directory without a trailing '/': the private root makes a bind's parents first, and
      // "dir/"'s parent is "dir" itself (its mkdir then failed with EEXIST on CUDA).
      const size_t slash = fault->once_path.rfind('/');
      const std::string dir = slash == std::string::npos ? "."
                              : slash == 0                ? "/"
                                                          : fault->once_path.substr(0, slash);
      sandbox.extra_rules.push_back({dir, FsAccess::kCreate,
                                     std::string(kFaultEnvVar) + " once= marker (test hook)"});
      LogWarn("test fault injection: the sandbox lets this worker create files in " + dir);
    }
  }
  Result<SandboxReport> report = ApplySandbox(sandbox);
  if (!report.ok()) {
    // Reported on the channel by RunWorker, which then exits without reading the model.
    args.sandbox = "none; required and failed";
    args.sandbox_error = report.status().message();
  } else {
    args.sandbox = report->Summary();
    const std::string line = "worker " + std::to_string(args.channel) + " sandbox: " + args.sandbox;
    if (report->off || report->complete()) {
      LogInfo(line);
    } else {
      LogWarn(line);
    }
  }
  return RunWorker(args);
}
