#include "supervisor/job/early_spare.h"

#include <cstdlib>
#include <utility>

#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/process/subprocess.h"
#include "supervisor/workers/dispatch_channel.h"

namespace framemill {

WorkerOptions SpawnOptions(const Config& config, WorkerLaunch launch, const std::string& log_dir) {
  WorkerOptions opts;
  opts.worker_binary = WorkerBinaryPath(config.worker_binary);
  opts.launch = std::move(launch);
  opts.launch.log_level = config.log_level;
  opts.launch.sandbox = config.worker_sandbox.value_or(WorkerSandbox::kAuto);
  opts.log_dir = log_dir;
  opts.pytorch_alloc_conf = config.pytorch_alloc_conf;
  return opts;
}

EarlySpare::EarlySpare(const JobSpec& job, const Config& config) {
  const DeviceSetting& device = job.settings.device;
  // A worker that may drive a GPU, as the worker itself decides (worker_main.cpp): none where
  // the host has no NVIDIA driver, whatever the job asks.
  if (device.kind == DeviceKind::kCpu || !HostHasNvidiaDriver()) return;
  std::string dir = TemporaryDirectory() + "/framemill-spare-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return;
  log_dir_ = dir;
  WorkerLaunch launch;
  launch.device = device;
  Result<std::unique_ptr<WorkerPool>> pool =
      WorkerPool::CreateSpares(SpawnOptions(config, launch, dir), 1);
  // Where the job's first worker goes (WorkerRoster::Spawn): a spare elsewhere would not fit.
  const int first_gpu = GpuFor(-1, job.settings.gpus, {});
  if (!pool.ok() || !(*pool)->Spawn(0, first_gpu).ok()) {
    spdlog::debug("no spare started before the job: the job starts its own worker");
    return;
  }
  pool_ = std::move(*pool);
}

EarlySpare::~EarlySpare() {
  // Taken, its process is the job's pool's and gone with it. Not taken, it holds nothing to keep
  // and may still be loading its device, where it reads no stop: killed at once (the pool's
  // destructor), not waited for.
  pool_.reset();
  if (!log_dir_.empty()) (void)RemoveTree(log_dir_);
}

std::vector<WorkerPool*> EarlySpare::spares() const {
  if (pool_ == nullptr) return {};
  return {pool_.get()};
}

}  // namespace framemill
