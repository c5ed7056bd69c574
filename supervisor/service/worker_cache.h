// The service's worker cache: workers kept loaded or ready between jobs, so that a job does not
// wait for a worker's start. Two kinds, one home:
//   - warm places: a job's idle workers (and their arena) kept after it ends, one place per set
//     of service GPUs (or the job's own device without a GPU set); the next job on exactly
//     those GPUs with a model they fit takes them (RunJob decides the fit: job/warm_key.h).
//   - spare places (config spare_workers, local backend): one per service GPU (or one for the
//     jobs' device), each with a worker started without a model, its device made ready, lent
//     to the job that runs there for its first worker.
// A job Takes a WorkerLease when it starts and Returns it when it ends; the loop calls Keep on
// every pass to start the spares that are missing.
//
// Why in service/: a warm place holds the job's WarmWorkers (job/job_runner.h), which the layers
// below cannot see.
//
// Threads: the service's loop thread only, but for WorkerLease::SpareTaken (a job's thread). The
// workers die with the thread that started them (PR_SET_PDEATHSIG follows the parent thread):
// Keep runs on the loop's thread, which outlives every job.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "supervisor/service/gpu_scheduler.h"
#include "supervisor/job/job_runner.h"
#include "supervisor/workers/worker_pool.h"

namespace framemill {

// Idle workers kept loaded between jobs, on one set of GPUs (or on the job's own device when the
// service has no GPU set). A running job holds the place it was given.
struct WarmSlot {
  WarmWorkers warm;
  std::vector<int> gpus;  // the service GPUs its workers are on
  std::string model;      // the model file the last job using it named
  bool in_use = false;
};

// One spare worker's place: a service GPU, or, without a GPU set, the jobs' own device (-1).
struct SparePlace {
  int gpu_label = -1;  // the service GPU it stands for; -1 = none (no GPU set)
  int gpu = -1;        // the GPU its spare is pinned to; -1 = not pinned (no GPU set, or labels)
  // Its spare runs on the CPU: the next one starts when the job that took one ends, not while it
  // runs (a spare's start, about a second of CPU, would compete with the job for the cores).
  bool cpu = false;
  std::string log_dir;  // spare-K-GEN.log, and the workers' logs of jobs on this GPU alone
  std::unique_ptr<WorkerPool> pool;  // its spare, if started; null while a job holds it
  bool held = false;                 // lent to a running job (WorkerLease)
  // Set by the holding job's thread when its first worker took the spare: Keep then starts the
  // next one at once, while the job runs.
  std::atomic<bool> taken{false};
  int failures = 0;          // spares that exited by themselves, in a row
  uint64_t generations = 0;  // spares started here: each pool's log names count on from it
  uint64_t next_try_ms = 0;  // none is started before this (after failures)
};

// What a running job holds of the cache, from Take to Return.
class WorkerLease {
 public:
  WarmWorkers* warm() const { return &slot_->warm; }  // JobOptions::warm
  const std::string& log_dir() const { return log_dir_; }  // JobOptions::worker_log_dir
  std::vector<WorkerPool*> spares() const;  // JobOptions::spares: the lent pools with a spare
  // JobOptions::on_spare_taken, on the job's thread: a worker took the spare of `from`.
  void SpareTaken(WorkerPool* from);

 private:
  friend class WorkerCache;
  WarmSlot* slot_ = nullptr;
  std::string log_dir_;  // its workers' logs: one folder per warm place
  // The spares of the places it runs on: by place, the pool (null when the place had none).
  std::vector<std::pair<SparePlace*, std::unique_ptr<WorkerPool>>> spares_;
};

// The workers' log folder for jobs on `gpus` (a CPU job beside GPU jobs: `cpu`) under
// `workers_dir` (the spool's workers/): that folder itself without a GPU set, else
// "gpus-0-1" or "cpu" in it, made 0750 when missing (a failure is logged). Workers number their
// logs per pool, so jobs running at once log into folders of their own.
std::string WorkerLogDir(const std::string& workers_dir, bool gpu_set,
                         const std::vector<int>& gpus, bool cpu);

class WorkerCache {
 public:
  // `gpu_labels`: the service GPUs are labels (FRAMEMILL_TEST_GPU_LABELS): spares not pinned.
  WorkerCache(const Config& config, bool gpu_labels, std::string workers_dir);
  WorkerCache(const WorkerCache&) = delete;
  WorkerCache& operator=(const WorkerCache&) = delete;

  // The spare places (config spare_workers, local backend only), made once at start.
  void MakeSparePlaces();
  // Starts a spare on every place that has none and is not held by a job (once a failed one's
  // pause is over), and notes spares that exited. Returns the live spares waiting at their
  // places (for the metrics).
  int64_t Keep();
  // For a job on `gpus` (a CPU job beside GPU jobs: `cpu`) with `model`: the warm place of
  // exactly those GPUs (made when missing; idle places on any of them are stopped first, as their
  // workers hold GPU memory the job needs) and the spares of its places (without a GPU set, the
  // one place; a CPU job beside GPU jobs none).
  WorkerLease Take(const std::vector<int>& gpus, bool cpu, const std::string& model);
  // Gives back what the job `job_id` held: its warm place is idle again; a place's spare the
  // job took is started again by Keep, an unused one goes back to its place.
  void Return(WorkerLease* lease, const std::string& job_id);
  // The idle warm places that have workers (for ChooseGpus).
  std::vector<WarmPlace> IdlePlaces() const;
  // Stops every warm and spare worker (the service stops; no job runs).
  void Stop();

 private:
  const Config& config_;
  const bool gpu_labels_;
  const std::string workers_dir_;
  std::list<WarmSlot> warm_;             // a list: leases point into it
  std::list<SparePlace> spare_places_;   // a list: leases point into it
};

}  // namespace framemill
