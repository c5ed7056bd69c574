// framemill-worker's program (worker/worker_main.h): one GPU (or CPU) worker process, started by
// the supervisor. Its command line is kUsage below (printed on a usage error): every flag it
// accepts is there.
//
// The supervisor hands the model over as an open descriptor (--model-fd); the label only names
// it in messages. The sandbox (worker/sandbox/sandbox.h) goes on here, before the model is read:
// every descriptor above 2 is closed then, except --wake-fd's and --model-fd's (and those the
// tests' hooks keep: worker/worker_hooks.h). The arguments are a WorkerLaunch's
// (common/worker_launch.h), read by its parser.
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
#include "common/env_knobs.h"
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
    "usage: framemill-worker [--launch-version 1]\n"
    "                        --control PATH --channel K --wake-fd N --model-fd FD\n"
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

// Whether the descriptor `fd`, given on the command line, is open; nothing this process could
// start may inherit it.
bool Inherited(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags < 0) return false;
  ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  return true;
}

// The launch as read (common/worker_launch.h), and the sandbox it asks for.
struct Parsed {
  framemill::WorkerLaunch launch;
  framemill::SandboxOptions sandbox;
};

// The launch's settings that RunWorker reads, into *args.
void TakeLaunch(const framemill::WorkerLaunch& l, framemill::WorkerArgs* args) {
  args->control = l.control;
  args->channel = l.channel;
  args->wake_fd = l.wake_fd;
  args->model_fd = l.model_fd;
  args->model_label = l.model_label;
  args->device = l.device;
  args->precision = l.precision;
  args->optimization = l.optimization;
  args->tile = l.tile;
  args->probe_width = l.probe_width;
  args->probe_height = l.probe_height;
  args->probe_batch = l.probe_batch;
  args->cudnn_autotune = l.cudnn_autotune;
}

// Reads the command line into *args and *parsed: 0, or the exit code of a usage error (said on
// stderr).
int ParseCommandLine(const std::vector<std::string>& a, framemill::WorkerArgs* args,
                     Parsed* parsed) {
  using namespace framemill;
  const Status s = ParseWorkerLaunch(a, LaunchPart::kCommandLine, &parsed->launch);
  if (!s.ok()) {
    std::fprintf(stderr, "framemill-worker: %s\n", s.message().c_str());
    return Usage();
  }
  const WorkerLaunch& l = parsed->launch;
  // Descriptors handed over by the supervisor: open, and kept through the sandbox's clean-up.
  const std::pair<const char*, int> fds[] = {{"--wake-fd", l.wake_fd}, {"--model-fd", l.model_fd}};
  for (const auto& [key, fd] : fds) {
    if (fd < 0) continue;
    if (!Inherited(fd)) {
      std::fprintf(stderr, "framemill-worker: %s %d is not an open descriptor\n", key, fd);
      return kWorkerExitUsage;
    }
    parsed->sandbox.keep_fds.push_back(fd);
  }
  parsed->sandbox.mode = l.sandbox;
  TakeLaunch(l, args);
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
  std::string timings;
  if (device.ok()) {
    Status ready = PrepareDevice(*device, &timings);
    if (!ready.ok()) LogWarn(me + ": " + ready.message());
  } else {
    LogWarn(me + ": " + device.status().message());  // said again, to the job, by RunWorker
  }
  const uint64_t t_ready = MonotonicMs();
  LogInfo(me + ": " + (device.ok() ? device->str() : std::string("no device")) + " ready " +
          std::to_string(t_ready - args->main_ms) + " ms after main() (device " +
          std::to_string(t_ready - t0) + " ms" + (timings.empty() ? "" : ": " + timings) +
          "); waiting for a job's model");
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
  const Status s = ParseWorkerLaunch(request->arguments, LaunchPart::kLoadRequest, &parsed->launch);
  if (!s.ok()) {
    std::fprintf(stderr, "framemill-worker: %s\n", s.message().c_str());
    return kWorkerExitUsage;
  }
  TakeLaunch(parsed->launch, args);
  if (args->model_label.empty()) args->model_label = "the model";
  if (args->channel != channel) {
    InitLogging("worker" + std::to_string(args->channel), parsed->launch.log_level);
  }
  args->model_fd = model_fd;
  LogInfo("worker " + std::to_string(args->channel) + ": a spare, started " +
          std::to_string(args->main_ms - t0) + " ms before this job took it (" +
          std::to_string(t_ready - t0) + " ms of it preparing " +
          (device.ok() ? device->str() : std::string("the device")) +
          (timings.empty() ? "" : ": " + timings) + ")");
  return std::nullopt;
}

}  // namespace

namespace framemill {

int WorkerMain(int argc, char** argv, WorkerHooks& hooks) {
  const uint64_t main_ms = MonotonicMs();
  ReadKnobs();  // the environment's FRAMEMILL_* variables, once (common/env_knobs.h)
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
  if (const int bad = ParseCommandLine(a, &args, &parsed); bad != 0) return bad;
  const std::string& level = parsed.launch.log_level;
  const std::string& model_path = parsed.launch.model_path;
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
  InitLogging("worker" + std::to_string(args.channel), level);
  LogSetKnobs(KnobReader::kWorker);

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
  hooks.AdjustSandbox(sandbox);
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
  if (parsed.launch.await_model) {
    if (std::optional<int> exit_code = AwaitModel(&args, &parsed)) return *exit_code;
  }
  if (args.model_label.empty()) args.model_label = "the model";
  return RunWorker(args, hooks);
}

}  // namespace framemill
