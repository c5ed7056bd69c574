#include "supervisor/service/admission.h"

#include <algorithm>
#include <cstdio>

#include "common/job_file.h"

namespace framemill {

QueuedJob ReadQueuedJob(const std::string& id, const std::string& job_dir, const Config& config,
                        bool gpu_labels) {
  QueuedJob q;
  q.id = id;
  if (FILE* f = std::fopen((job_dir + "/starts").c_str(), "re")) {
    int starts = 0;
    q.alone = std::fscanf(f, "%d", &starts) == 1 && starts > 0;
    std::fclose(f);
  }
  if (config.service_gpus.empty()) return q;
  Result<JobSpec> job = LoadJobFile(job_dir + "/job.json", config.defaults);
  if (!job.ok()) return q;  // fails on its thread, saying why
  q.needs_gpus = gpu_labels || job->settings.device.kind != DeviceKind::kCpu;
  q.ask.gpus = job->settings.gpus;
  q.ask.model = job->model;
  return q;
}

bool MayClaim(bool gpu_set, bool any_gpu_free, const RunningView& running) {
  if (running.alone) return false;
  if (!gpu_set) return running.jobs == 0;  // one job at a time
  return any_gpu_free || !running.cpu;
}

HeadDecision DecideHead(const QueuedJob& q, const std::vector<int>& owned,
                        const std::set<int>& free, const RunningView& running,
                        const std::function<int()>& waiting, const std::vector<WarmPlace>& warm) {
  using Kind = HeadDecision::Kind;
  if (running.alone) return {};
  if (q.alone && running.jobs > 0) return {};  // once the running jobs end
  if (owned.empty()) return {Kind::kStart, {}, false};
  if (!q.needs_gpus) {
    // A CPU job beside the GPU jobs: one at a time (it takes the host's cores).
    if (running.cpu) return {};
    return {Kind::kStart, {}, true};
  }
  if (!CheckGpuAsk(owned, q.ask).ok()) {
    return {Kind::kStart, {}, false};  // its thread fails it, saying which GPUs there are
  }
  const int queued = waiting();
  // A job resuming alone takes every free GPU: nothing else runs beside it.
  std::vector<int> gpus = ChooseGpus(free, q.ask, q.alone ? 1 : queued, warm);
  if (gpus.empty()) return {Kind::kWaitForGpus, {}, false};
  return {Kind::kStart, std::move(gpus), false};
}

void ShareSettings(const std::vector<int>& gpus, bool gpu_labels, JobSettings* s) {
  if (gpus.empty()) return;
  const int n = static_cast<int>(gpus.size());
  const int per_gpu =
      s->workers_per_gpu > 0 ? s->workers_per_gpu : std::max(1, (s->workers + n - 1) / n);
  s->workers = std::min(kMaxWorkers, n * per_gpu);
  if (gpu_labels) {
    s->gpus.clear();  // labels only: the workers run where the job says
  } else {
    s->gpus = gpus;
    if (s->device.kind == DeviceKind::kAuto) s->device = DeviceSetting{DeviceKind::kCuda, -1};
  }
}

void GpuShare::Take(const std::vector<int>& gpus) {
  for (int g : gpus) free_.erase(g);
}

void GpuShare::Give(const std::vector<int>& gpus) { free_.insert(gpus.begin(), gpus.end()); }

}  // namespace framemill
