// A spare worker for a `framemill run` job's first worker, started before the job is prepared:
// its process, sandbox and device get ready while the input is probed (and, in face mode, while
// its faces are found), and the job's pool takes it as the service's pools take its spares
// (WorkerPool::Adopt). On a GPU that is the CUDA context and LibTorch's CUDA libraries, most of
// a cold worker's start.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/job_file.h"
#include "supervisor/workers/worker_pool.h"

namespace framemill {

// A pool's options: `launch` with the config's log level and sandbox, the worker program, the
// allocator's settings, and where the workers log. A spare started with a job's device and
// nothing else of its launch fits that job's pool (SpareKey): the model and the probe go in the
// load request.
WorkerOptions SpawnOptions(const Config& config, WorkerLaunch launch, const std::string& log_dir);

class EarlySpare {
 public:
  // Starts one where the job's first worker runs on a GPU; none on the CPU, where it would take
  // the cores the probe uses and a worker starts in a third of a second, and none when it cannot
  // start (the job then starts its own worker, as without it).
  EarlySpare(const JobSpec& job, const Config& config);
  EarlySpare(const EarlySpare&) = delete;
  EarlySpare& operator=(const EarlySpare&) = delete;
  ~EarlySpare();  // kills a spare the job did not take; removes the folder of its log

  // JobOptions::spares: the pool, while it has a spare.
  std::vector<WorkerPool*> spares() const;

 private:
  std::string log_dir_;  // private, made for its log (spare-0-1.log until taken)
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace framemill
