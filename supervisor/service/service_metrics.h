// The service's metrics (supervisor/report/metrics.h): the counts of the runs that ended, the
// running jobs' live figures, and the file the node exporter reads. The service's loop and the
// jobs' threads feed it; each change of a job's state and, while jobs run, every
// kMetricsIntervalMs the file is rewritten. A failed write is logged once until a write
// succeeds again; it never stops the service.
//
// Thread-safe: every member function may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/mutex.h"
#include "supervisor/spool/spool.h"
#include "supervisor/report/job_result.h"
#include "supervisor/report/metrics.h"
#include "supervisor/workers/dispatch_stats.h"

namespace framemill {

// The metrics file is rewritten this often while a job runs (besides each state change).
inline constexpr uint64_t kMetricsIntervalMs = 2000;

class ServiceMetrics {
 public:
  // `count_spool` counts the spool for each write (it takes the caller's spool lock; it is
  // called outside this type's lock). `service_gpus`: how many GPUs the service owns.
  ServiceMetrics(int64_t service_gpus, std::function<SpoolCounts()> count_spool);

  // Notes the start time and finds the file: config metrics_textfile, relative to the spool's
  // `root` unless absolute ("" = no file); makes its directory (0755) and writes the first file.
  // Before any other call.
  void Start(const std::string& metrics_textfile, const std::string& root);
  // Rewrites the file (nothing without one); `up` false in the last one, when stopping.
  void Write(bool up = true) EXCLUDES(mu_);
  // Takes a progress report of running job `id` (started at `run_ms`, monotonic);
  // `attempts` holds the worker counts of its attempts that ended (crash retries). Writes the
  // file when kMetricsIntervalMs passed since the last write.
  void NoteProgress(const std::string& id, const JobProgress& p, uint64_t run_ms,
                    const std::vector<DispatchStats>& attempts) EXCLUDES(mu_);
  // Adds job `id`'s counts to the totals (every frame of its plan, less those resumed, when it
  // `finished`) and forgets its live figures.
  void EndRun(const std::string& id, const std::vector<DispatchStats>& attempts, bool finished);
  // Whether the spool's own file system is full (the loop pauses claiming; ServiceSpool).
  void NoteSpoolFull(bool full) { spool_full_.store(full); }
  // The loop's figures of the GPU set and the spares.
  void NoteGpusFree(int64_t n) { gpus_free_.store(n); }
  void NoteSparesWaiting(int64_t n) { spares_waiting_.store(n); }

  // What a file written now would say, with the spool's counts `c` (what Write renders).
  MetricsFigures Figures(const SpoolCounts& c, bool up) const;

 private:
  // A running job's figures, from its latest progress report.
  struct LiveJob {
    int64_t frames = 0;           // through the model since this start of the job
    int64_t frames_resumed = -1;  // finished by an earlier start (-1: no report yet)
    int64_t frames_total = 0;     // the job's, resumed ones included
    double fps = 0;
    int events_seen = -1;  // the running attempt's crashes + kills + recycles in `events`
    size_t attempts_ended = 0;
    WorkerEventCounts ended_attempts;  // counts of the job's ended attempts (crash retries)
    WorkerEventCounts events;          // those and the running attempt's
    std::vector<WorkerMemory> workers;
    uint64_t updated_ms = 0;  // when fps and workers were last taken
    bool waiting_for_space = false;  // its latest report: a full disk (JobProgress::waiting)
  };
  // Takes the worker counts of the job's ended attempts. Under mu_.
  static void AttemptEnded(LiveJob* live, const std::vector<DispatchStats>& attempts);
  MetricsFigures FiguresLocked(const SpoolCounts& c, bool up) const REQUIRES(mu_);

  const int64_t service_gpus_;
  const std::function<SpoolCounts()> count_spool_;
  std::string path_;  // "" = no metrics; set by Start, read-only after
  std::atomic<int64_t> gpus_free_{0};       // free service GPUs (the loop's GpuShare)
  std::atomic<bool> spool_full_{false};
  std::atomic<int64_t> spares_waiting_{0};  // live spares at their places (the WorkerCache)
  // Guards the fields below; held while the file is written, so writes never interleave.
  mutable Mutex mu_;
  // Counters of the runs that ended; version and start time.
  MetricsFigures totals_ GUARDED_BY(mu_);
  std::map<std::string, LiveJob> live_ GUARDED_BY(mu_);  // by job id
  uint64_t last_write_ms_ GUARDED_BY(mu_) = 0;
  bool failing_ GUARDED_BY(mu_) = false;  // the last write failed (and said so)
};

}  // namespace framemill
