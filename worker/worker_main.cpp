// framemill-worker's program (worker/worker_main.h): one GPU (or CPU) worker process, started by
// the supervisor. Its command line is kUsage below (printed on a usage error): every flag it
// accepts is there.
//
// The supervisor hands the model over as an open descriptor (--model-fd); the label only names
// it in messages. The sandbox (worker/sandbox/sandbox.h) goes on here, before the model is read:
// every descriptor above 2 is closed then, except those named by an argument ending in "-fd" (and
// those the tests' hooks keep: worker/worker_hooks.h).
//
// A spare (--await-model on, started by the service before any job wants it) has no model yet:
// after its sandbox it makes its device ready (PrepareDevice) and waits on its wake socket for a
// job's load request (common/load_request.h), which brings the model's descriptor, the job's log
// and the model's arguments; from there it is a worker like any other.
#include "worker/worker_main.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iterator>
#include <optional>
#include <string>
#include <sys/prctl.h>
#include <unistd.h>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/load_request.h"
#include "common/log_lines.h"
#include "worker/model/example_models.h"
#include "worker/model/frame_model.h"
#include "worker/model_import/catalog.h"
#include "worker/sandbox/sandbox.h"
#include "worker/worker_hooks.h"
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
    "       framemill-worker --control PATH --channel K --wake-fd N --device DEV\n"
    "                        --await-model on [--log-level L] [--sandbox MODE]\n"
    "                        (a spare: the model's arguments and descriptor come later)\n"
    "       framemill-worker ... --model PATH ...  (tools: the worker opens the file itself,\n"
    "                                               instead of --model-fd)\n"
    "       framemill-worker --export-model NAME PATH\n"
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

// What the command line sets beside WorkerArgs.
struct Parsed {
  std::string level = "info";
  std::string model_path;
  bool have_device = false;
  bool await_model = false;  // a spare: the model's arguments come later (common/load_request.h)
  framemill::SandboxOptions sandbox;
};

// The keys a load request may carry: the model's, the channel's and the job's own name for the
// device (of the same class as the spare's: supervisor/workers/worker_pool.h, SpareKey); none
// fixed at spawn (the sandbox, the control block, the log level).
bool LoadRequestKey(const std::string& key) {
  static const char* const kKeys[] = {"--channel",     "--device",        "--model-label",
                                      "--precision",   "--optimize",      "--tile",
                                      "--probe-size",  "--probe-batch",   "--cudnn-autotune"};
  return std::any_of(std::begin(kKeys), std::end(kKeys),
                     [&](const char* k) { return key == k; });
}

// Reads key-value arguments into *args and *parsed: 0, or the exit code of a usage error (said on
// stderr). `load_request`: the arguments of a spare's load request (LoadRequestKey only).
int ParseArguments(const std::vector<std::string>& a, bool load_request, framemill::WorkerArgs* args_out,
                   Parsed* parsed) {
  using namespace framemill;
  WorkerArgs& args = *args_out;
  if (a.size() % 2 != 0) return Usage();
  for (size_t i = 0; i + 1 < a.size(); i += 2) {
    const std::string& key = a[i];
    const std::string& value = a[i + 1];
    if (load_request && !LoadRequestKey(key)) {
      std::fprintf(stderr, "framemill-worker: %s may not come in a load request\n", key.c_str());
      return kWorkerExitUsage;
    }
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
      parsed->model_path = value;
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
      parsed->have_device = true;
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
      parsed->level = value;
    } else if (key == "--sandbox") {
      std::optional<WorkerSandbox> mode = ParseWorkerSandbox(value);
      if (!mode) return Usage();
      parsed->sandbox.mode = *mode;
    } else if (key == "--await-model") {
      if (value != "on" && value != "off") return Usage();
      parsed->await_model = value == "on";
    } else {
      std::fprintf(stderr, "framemill-worker: unknown argument %s\n", key.c_str());
      return kWorkerExitUsage;
    }
    // Descriptors handed over by the supervisor survive the sandbox's clean-up.
    if (EndsWith(key, "-fd")) {
      std::optional<int> fd = InheritedFd(value);
      if (fd) parsed->sandbox.keep_fds.push_back(*fd);
    }
  }
  return 0;
}

// A spare worker (--await-model on) from its sandbox to its job: makes the device ready, waits
// for the load request (common/load_request.h), takes its log as stdout and stderr and its model
// arguments as if given on the command line. nullopt, or the exit code to end with (0 when the
// supervisor asked it to stop instead).
std::optional<int> AwaitModel(framemill::WorkerArgs* args, Parsed* parsed) {
  using namespace framemill;
  // Die with the supervisor; and it may have died before this.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const pid_t parent = ::getppid();
  if (parent == 1) return kWorkerExitOrphaned;
  const std::string me = "spare worker on channel " + std::to_string(args->channel);
  const uint64_t t0 = MonotonicMs();
  Result<torch::Device> device = ResolveDevice(args->device);
  if (device.ok()) {
    Status ready = PrepareDevice(*device);
    if (!ready.ok()) LogWarn(me + ": " + ready.message());
  } else {
    LogWarn(me + ": " + device.status().message());  // said again, to the job, by RunWorker
  }
  const uint64_t t_ready = MonotonicMs();
  LogInfo(me + ": " + (device.ok() ? device->str() : std::string("no device")) + " ready " +
          std::to_string(t_ready - args->main_ms) + " ms after main() (device " +
          std::to_string(t_ready - t0) + " ms); waiting for a job's model");
  Result<LoadRequest> request =
      ReceiveLoadRequest(args->wake_fd, [parent] { return ::getppid() == parent; });
  if (!request.ok()) {
    if (request.status().code() == StatusCode::kCancelled) return kWorkerExitOrphaned;
    LogError(me + ": " + request.status().message());
    return kWorkerExitUsage;
  }
  if (request->stop) {
    LogInfo(me + ": asked to stop, after " + std::to_string(MonotonicMs() - t_ready) +
            " ms waiting");
    return kWorkerExitOk;
  }
  const int model_fd = request->fds[0], log_fd = request->fds[1];
  LogInfo(me + ": taken by a job after " + std::to_string(MonotonicMs() - t_ready) +
          " ms waiting; its log follows there");
  std::fflush(stdout);
  if (::dup2(log_fd, STDOUT_FILENO) < 0 || ::dup2(log_fd, STDERR_FILENO) < 0) {
    LogError(me + ": cannot write to the job's log: " + std::strerror(errno));
    return kWorkerExitUsage;
  }
  ::close(log_fd);
  args->main_ms = MonotonicMs();  // the job's wait starts here: the start's log line splits it
  const int channel = args->channel;
  if (const int bad = ParseArguments(request->arguments, /*load_request=*/true, args, parsed);
      bad != 0) {
    return bad;
  }
  if (args->model_label.empty()) args->model_label = "the model";
  if (args->channel != channel) InitLogging("worker" + std::to_string(args->channel), parsed->level);
  args->model_fd = model_fd;
  LogInfo("worker " + std::to_string(args->channel) + ": a spare, started " +
          std::to_string(args->main_ms - t0) + " ms before this job took it (" +
          std::to_string(t_ready - t0) + " ms of it preparing " +
          (device.ok() ? device->str() : std::string("the device")) + ")");
  return std::nullopt;
}

}  // namespace

namespace framemill {

int WorkerMain(int argc, char** argv, WorkerHooks& hooks) {
  const uint64_t main_ms = MonotonicMs();
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() == 3 && a[0] == "--export-model") {
    Status s = ExportExampleModel(a[1], a[2]);
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
  Parsed parsed;
  if (const int bad = ParseArguments(a, /*load_request=*/false, &args, &parsed); bad != 0) {
    return bad;
  }
  std::string& level = parsed.level;
  std::string& model_path = parsed.model_path;
  SandboxOptions& sandbox = parsed.sandbox;
  if (!model_path.empty() && args.model_fd < 0) {
    args.model_fd = ::open(model_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (args.model_fd < 0) {
      std::fprintf(stderr, "framemill-worker: %s: %s\n", model_path.c_str(), std::strerror(errno));
      return kWorkerExitModel;
    }
    sandbox.keep_fds.push_back(args.model_fd);
    if (args.model_label.empty()) args.model_label = model_path;
  }
  if (args.control.empty() || args.channel < 0 || args.wake_fd < 0 ||
      (args.model_fd < 0 && !parsed.await_model) || !parsed.have_device) {
    return Usage();
  }
  InitLogging("worker" + std::to_string(args.channel), level);

  if (sandbox.mode != WorkerSandbox::kOff) {
    // The driver's JIT cache in the home directory is out of reach: see worker/sandbox/sandbox.h.
    ::setenv("CUDA_CACHE_DISABLE", "1", 1);
  }
  sandbox.control = args.control;
  // A worker that may drive a GPU (worker/sandbox/sandbox.h: CUDA and Landlock's file rules).
  sandbox.cuda = args.device.kind != DeviceKind::kCpu && HostHasNvidiaDriver();
  Result<std::vector<int>> hooked = hooks.BeforeSandbox();
  if (!hooked.ok()) {
    std::fprintf(stderr, "framemill-worker: %s\n", hooked.status().ToString().c_str());
    return kWorkerExitUsage;
  }
  sandbox.keep_fds.insert(sandbox.keep_fds.end(), hooked->begin(), hooked->end());
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
  if (parsed.await_model) {
    if (std::optional<int> exit_code = AwaitModel(&args, &parsed)) return *exit_code;
  }
  if (args.model_label.empty()) args.model_label = "the model";
  return RunWorker(args, hooks);
}

}  // namespace framemill
