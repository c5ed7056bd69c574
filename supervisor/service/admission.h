// The service's admission: which claimed job starts next, when, and on which of the service's
// GPUs (config service_gpus). The queue's head is the one job claimed and not running yet; it
// starts when DecideHead says so, and nothing behind it starts before it does (the share's rules
// are gpu_scheduler.h's). The decisions are pure functions of what runs and what is free; the
// service (service.cpp) reads the spool and acts on them.
//
//   - Without a GPU set: one job at a time, on the device it names.
//   - With one: GPU jobs side by side, each on GPUs of its own (ChooseGpus); a CPU job beside
//     them, one at a time; a job naming GPUs the service does not own starts at once, and its
//     thread fails it saying which there are.
//   - A job resumed after the supervisor died while it ran (QueuedJob::alone) waits until
//     nothing runs, then runs alone with every free GPU: a crash it causes again is charged to it
//     only.
//
// Not thread-safe: the service's loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/config.h"
#include "supervisor/service/gpu_scheduler.h"

namespace framemill {

// A claimed job the service has not started yet: what it asks of the GPU set.
struct QueuedJob {
  std::string id;
  bool needs_gpus = false;  // takes service GPUs (the service has some and the job is no CPU job)
  // Resumed after the supervisor died while it ran (its `starts` above 0; an orderly stop
  // lowers it): it runs alone, so that a crash it causes again is charged to it only.
  bool alone = false;
  GpuAsk ask;
  bool waiting_logged = false;  // said once that it waits for GPUs
};

// What a claimed job in `job_dir` (active/<id>/) asks: its `starts` file and, with a GPU set, its
// job file (one that cannot be read asks nothing and fails on its thread). `gpu_labels`: the
// service's GPUs are labels (FRAMEMILL_TEST_GPU_LABELS): every job takes some.
QueuedJob ReadQueuedJob(const std::string& id, const std::string& job_dir, const Config& config,
                        bool gpu_labels);

// What runs now, as admission sees it.
struct RunningView {
  size_t jobs = 0;
  bool alone = false;  // one runs alone: nothing starts beside it
  bool cpu = false;    // a CPU job runs beside GPU jobs
};

// Whether the loop may claim the next job from the spool (it has no head): not while a job runs
// alone; without a GPU set, not while a job runs; with one, not while no GPU is free and a CPU
// job runs (nothing could start: claim nothing yet).
bool MayClaim(bool gpu_set, bool any_gpu_free, const RunningView& running);

// What becomes of the head now.
struct HeadDecision {
  enum class Kind { kWait, kWaitForGpus, kStart };
  Kind kind = Kind::kWait;  // kWaitForGpus: a GPU job whose share is not free (said once)
  std::vector<int> gpus;    // kStart: the service GPUs it gets (empty: none)
  bool cpu = false;         // kStart: a CPU job beside GPU jobs
};

// The head `q`'s fate, with the service's `owned` GPUs, the `free` ones, what runs, the idle
// warm places, and `waiting`: the jobs queued, the head included (counted only for a GPU share;
// it may read the spool).
HeadDecision DecideHead(const QueuedJob& q, const std::vector<int>& owned,
                        const std::set<int>& free, const RunningView& running,
                        const std::function<int()>& waiting, const std::vector<WarmPlace>& warm);

// A job's settings on the service GPUs it was given (none: unchanged): workers_per_gpu on each
// (else its `workers` spread over them, at least one each, at most kMaxWorkers in all), pinned
// to them, on CUDA when its device was auto. With `gpu_labels` the GPUs are labels only: the
// workers run where the job says.
void ShareSettings(const std::vector<int>& gpus, bool gpu_labels, JobSettings* s);

// The service's GPUs that no running job holds.
class GpuShare {
 public:
  explicit GpuShare(const std::vector<int>& owned) : free_(owned.begin(), owned.end()) {}
  const std::set<int>& free() const { return free_; }
  void Take(const std::vector<int>& gpus);  // a job starts on them
  void Give(const std::vector<int>& gpus);  // it ended

 private:
  std::set<int> free_;
};

}  // namespace framemill
