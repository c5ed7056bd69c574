// framemill-worker's launch on one channel of a pool (worker_pool.h: WorkerLaunchFor and the
// arguments encoded from it), and the key a spare must match to serve a pool (SpareKey).
#include <algorithm>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "supervisor/process/subprocess.h"
#include "supervisor/workers/worker_pool.h"

namespace framemill {
namespace {

// The device a worker told `options.launch.device` (on `gpu`) ends up on, as far as the supervisor
// can tell: "auto" is cuda:0 where the NVIDIA driver is (the worker falls back to the CPU only when
// CUDA then fails), "cuda" is cuda:0. Spares and jobs that agree on it agree on what a spare
// prepared and on the sandbox it chose (worker/sandbox/sandbox.h: CUDA or not).
std::string DeviceClass(const WorkerOptions& options, int gpu) {
  if (gpu >= 0) return "pinned cuda";
  const DeviceSetting& d = options.launch.device;
  switch (d.kind) {
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kAuto:
      return HostHasNvidiaDriver() ? "cuda:0" : "cpu";
    case DeviceKind::kCuda:
      return "cuda:" + std::to_string(std::max(0, d.index));
  }
  return Name(d);
}

}  // namespace

WorkerLaunch WorkerLaunchFor(const WorkerOptions& options, int k, int gpu,
                             const std::string& control, int wake_fd, bool spare) {
  WorkerLaunch launch = options.launch;
  launch.control = control;
  launch.channel = k;
  launch.wake_fd = wake_fd;
  if (gpu >= 0) launch.device = *ParseDevice("cuda");
  launch.await_model = spare;
  launch.model_fd = spare ? -1 : kWorkerModelFd;
  launch.model_label = options.model;  // for messages; the worker never opens it
  return launch;
}

std::vector<std::string> WorkerSpawnArguments(const WorkerOptions& options, int k, int gpu,
                                              const std::string& control, int wake_fd,
                                              bool spare) {
  return EncodeSpawnPart(WorkerLaunchFor(options, k, gpu, control, wake_fd, spare));
}

std::vector<std::string> WorkerModelArguments(const WorkerOptions& options, int k) {
  return EncodeModelPart(WorkerLaunchFor(options, k, -1, "", -1, /*spare=*/true));
}

std::vector<std::string> WorkerArguments(const WorkerOptions& options, int k, int gpu,
                                         const std::string& control, int wake_fd) {
  return EncodeCommandLine(WorkerLaunchFor(options, k, gpu, control, wake_fd, false));
}

std::string SpareKey(const WorkerOptions& options, int gpu) {
  // What WorkerSpawnArguments fixes, the device by its class; and the spawn's environment.
  return FindExecutable(options.worker_binary) + "|gpu " + std::to_string(gpu) + "|device " +
         DeviceClass(options, gpu) + "|log " + options.launch.log_level + "|sandbox " +
         Name(options.launch.sandbox) + "|alloc " + options.pytorch_alloc_conf;
}

}  // namespace framemill
