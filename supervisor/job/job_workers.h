// A job's workers: the warm pool of the previous job reused when it fits (warm_key.h), else new
// workers started (taking the service's spares where they fit) while the previous job's retire
// beside the start; and the dispatcher that hands them chunks. Owns the dispatcher and the
// retiring pool's thread.
#pragma once

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/job/job_files.h"
#include "supervisor/job/job_options.h"
#include "supervisor/job/prepared_job.h"
#include "supervisor/job/warm_key.h"
#include "supervisor/workers/dispatcher.h"
#include "supervisor/workers/timeline.h"

namespace framemill {

// What the first ready worker said.
struct StartedWorkers {
  FirstWorker first;
  double wait_s = 0;  // until it was ready (near 0 when warm)
};

class JobWorkers {
 public:
  JobWorkers(const JobSpec& job, const Config& config, const JobOptions& options,
             const JobFiles& files, const PreparedJob& prepared)
      : job_(job), config_(config), options_(options), files_(files), prepared_(prepared) {}
  // The previous job's workers, retiring beside this one (Start), are waited for here.
  ~JobWorkers();

  // This job's key for warm workers (warm_key.h).
  std::string WarmKey() const;
  // What this job does with the warm pool it is offered, decided once: the pool and its arena
  // go together.
  WarmChoice ChooseWarmPool() const;
  // Starts the workers (or takes the warm pool, `choice`) and waits for the first to be ready
  // and to have probed the model. `scratch`: where the workers log without a worker_log_dir.
  // `*wake` is set to the dispatcher as soon as it exists (a decoder already running wakes it).
  // `beat`: Dispatcher::Start's, while it waits.
  Result<StartedWorkers> Start(WarmChoice choice, Timeline* timeline, const std::string& scratch,
                               const std::atomic<bool>& stop, std::atomic<Dispatcher*>* wake,
                               const std::function<void()>& beat = nullptr);
  Dispatcher* dispatcher() const { return dispatcher_.get(); }

 private:
  Result<std::unique_ptr<WorkerPool>> NewPool(const std::string& scratch) const;

  const JobSpec& job_;
  const Config& config_;
  const JobOptions& options_;
  const JobFiles& files_;
  const PreparedJob& prepared_;
  std::unique_ptr<Dispatcher> dispatcher_;
  // Stops the previous job's idle workers of another model (Start): joined when the job ends,
  // not when its own workers are ready.
  std::thread retiring_;
};

}  // namespace framemill
