// The service's running jobs and the threads they run on. The loop starts a job on a free
// thread; the job's thread runs it, marks it ended and writes a byte to the wake pipe; the
// loop's wait (poll on wake_fd) returns and it takes the ended jobs back (TakeEnded) to give
// back their GPUs and workers.
//
// Threads: the loop's thread calls everything but Wake (any thread) and what RunningJob says of
// its atomics. Threads are not per job: a job thread lives as long as the service, because a
// worker dies with the thread that started it (the worker's PR_SET_PDEATHSIG follows the parent
// thread, not the process), and warm workers a job leaves behind must outlive that job's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "supervisor/service/worker_cache.h"

namespace framemill {

// A job running on one of the service's job threads.
struct RunningJob {
  std::string id;
  std::vector<int> gpus;  // the service GPUs it holds
  bool cpu = false;       // a CPU job beside GPU jobs (the service has a GPU set)
  bool alone = false;     // nothing starts beside it (QueuedJob::alone)
  WorkerLease workers;    // its warm place and lent spares (the WorkerCache's)
  std::atomic<bool> ended{false};  // set by its thread when it is done
  // When it last showed life (launched, a progress report, or a phase's beat; monotonic ms), set
  // by its thread. The loop stops a job silent for job_stall_timeout_s, and the watchdog is fed
  // only while no stopped job outlives that by a minute (service_watchdog.h).
  std::atomic<uint64_t> alive_ms{0};
  // The job's own stop, read by its run: set by its thread (a cancel, the service's stop, in
  // JobProgressSink) or by the loop (`stalled`: it showed no life for job_stall_timeout_s).
  std::atomic<bool> stop{false};
  std::atomic<bool> stalled{false};
};

// The rule: a job last alive at `alive_ms` has stalled at `now_ms` when it showed no life for
// `stall_ms` (a time after `now_ms`, set between the two reads, is life).
bool JobStalled(uint64_t now_ms, uint64_t alive_ms, uint64_t stall_ms);

// A thread that runs tasks one after another until it is destroyed.
class JobThread {
 public:
  JobThread();
  ~JobThread();  // waits for the task under way
  JobThread(const JobThread&) = delete;
  JobThread& operator=(const JobThread&) = delete;
  bool busy();  // a task runs (or is about to)
  void Run(std::function<void()> task);  // only when not busy

 private:
  void Loop();
  Mutex mu_;
  CondVar cv_;
  std::function<void()> task_ GUARDED_BY(mu_);
  bool quit_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started once the rest is made
};

class JobSlots {
 public:
  JobSlots() = default;
  ~JobSlots();  // joins the threads (no job may run), closes the pipe
  JobSlots(const JobSlots&) = delete;
  JobSlots& operator=(const JobSlots&) = delete;

  // Makes the wake pipe (before any Start).
  Status Open();
  // A thread with no job, made when every one is busy. Throws when a thread cannot be made:
  // call it before anything is taken for the job.
  JobThread* FreeThread();
  // Runs `body(job)` on `thread` (from FreeThread); then the job is marked ended and the loop
  // woken. Returns the job, which stays in the list until TakeEnded.
  RunningJob* Start(JobThread* thread, std::unique_ptr<RunningJob> job,
                    std::function<void(RunningJob*)> body);
  // The jobs that ended, out of the list (their threads are free or about to be).
  std::vector<std::unique_ptr<RunningJob>> TakeEnded();

  // Wakes the loop's wait (any thread).
  void Wake();
  int wake_fd() const { return wake_fds_[0]; }  // readable after a Wake
  void DrainWake();  // reads every byte waiting

  bool empty() const { return running_.empty(); }
  size_t size() const { return running_.size(); }
  bool AnyAlone() const;  // a job runs alone: nothing may start beside it
  bool AnyCpu() const;    // a CPU job runs beside GPU jobs
  std::set<std::string> Ids() const;
  std::vector<uint64_t> AliveTimes() const;  // RunningJob::alive_ms of the jobs not ended
  // Stops each job not ended that showed no life for `stall_ms` (JobStalled): sets its `stalled`
  // and `stop`. Returns the ids of those it stopped now (a job is stopped once).
  std::vector<std::string> StopStalled(uint64_t stall_ms);
  // Joins the threads (after the warm workers they started have stopped).
  void JoinThreads() { threads_.clear(); }

 private:
  std::list<std::unique_ptr<RunningJob>> running_;
  std::list<JobThread> threads_;  // as many as jobs ran at once
  int wake_fds_[2] = {-1, -1};    // a job's thread writes a byte when it ends
};

}  // namespace framemill
