// `framemill serve`: drains the spool (supervisor/spool/spool.h) under systemd: one job at a time,
// or, with config service_gpus, several at once, each on GPUs of its own (admission.h).
//
// At start it takes the spool's lock, removes shared memory left by dead supervisors, and
// resumes every job left in active/ (a crash, a power cut or a stop) before taking new ones.
// It notices new job files with inotify and rescans periodically. It tells systemd READY=1 once
// the spool is open, STATUS= lines while it works, and WATCHDOG=1 while its loop is alive
// (service_watchdog.h). On stop (SIGTERM/SIGINT) every running job stops, its finished segments
// stay in active/<id>/, and serve returns ok: the next start resumes them.
//
// The service is its loop and the parts it drives, each owning its state: the spool shared with
// the jobs (service_spool.h), admission (admission.h), the running jobs and their threads
// (job_slots.h), the worker cache (worker_cache.h), the metrics (service_metrics.h) and the
// watchdog (service_watchdog.h). One thread (the loop, Run) waits and decides; each job runs on
// a job thread (spool_job_run.h) and meets the loop only through its RunningJob, the
// ServiceSpool and the ServiceMetrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/service/admission.h"
#include "supervisor/service/job_slots.h"
#include "supervisor/service/service_metrics.h"
#include "supervisor/service/service_spool.h"
#include "supervisor/service/service_watchdog.h"
#include "supervisor/service/spool_job_run.h"
#include "supervisor/service/worker_cache.h"

namespace framemill {

// Runs the service until `stop` is set; errors are the spool's or the system's at start.
Status RunService(const Config& config, const std::atomic<bool>& stop);

class Service {
 public:
  Service(const Config& config, const std::atomic<bool>& stop);
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Serves until the stop; returns once every running job has stopped.
  Status Run();

 private:
  Status Open();               // checks the config, opens the spool, says what it found
  void Pass(int inotify_fd);   // one turn of the loop: reap, requests, start, wait
  void Close(int inotify_fd);  // after the stop: waits for the jobs, stops the workers
  // Starts as many queued jobs as admission allows, in queue order; the head that cannot start
  // yet waits, and nothing behind it starts.
  void StartJobs();
  void SayWaiting(QueuedJob* q);  // once: progress.json and the log say it waits for GPUs
  void Launch(const QueuedJob& q, const std::vector<int>& gpus, bool cpu);
  // Takes back the jobs that ended: their GPUs and workers. True when any ended.
  bool Reap();
  void ReturnFreedMemory();  // malloc_trim once no job runs
  // Stops the stalled jobs, then feeds the watchdog by service_watchdog.h's rule.
  void FeedWatchdog();
  // Waits up to `max_ms` for a spool change, a job's end or the stop.
  void WaitForWork(int inotify_fd, uint64_t max_ms);
  void Housekeeping();

  const Config& config_;
  const std::atomic<bool>& stop_;
  const bool gpu_labels_;  // FRAMEMILL_TEST_GPU_LABELS
  // Shared with the jobs' threads (each thread-safe).
  ServiceSpool spool_;
  ServiceMetrics metrics_;
  Watchdog watchdog_;
  const SpoolJobContext job_context_;  // what each job's run uses of the above
  // The loop's own state (its thread only).
  WorkerCache cache_;  // Close stops its workers before slots_ joins the threads that started them
  JobSlots slots_;
  GpuShare gpus_;
  std::optional<QueuedJob> head_;  // the queue's head: claimed, not running yet
  uint64_t last_housekeeping_ms_ = 0;
};

}  // namespace framemill
