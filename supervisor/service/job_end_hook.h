// The config's `on_job_end` hook: a program the service runs once for every job that ends (done,
// failed, cancelled, or set aside as no job), for notification scripts.
//
// The program is run directly (no shell), as the service's user, with the hook's arguments from
// the config followed by the path of the job's result.json; its environment adds FRAMEMILL_JOB_ID
// and FRAMEMILL_JOB_STATE (done | failed). It gets no stdin; its stdout and stderr go to
// on_job_end.log in the job's spool folder. It is killed (SIGKILL) after `on_job_end_timeout_s`.
// The service runs the hooks one after another on a thread of their own (JobEndHooks), so that
// neither its loop nor a job waits for them. A hook that fails is logged, never fails the job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "supervisor/spool/spool.h"

namespace framemill {

struct JobEndHook {
  std::vector<std::string> argv;  // program (absolute path) and its first arguments; empty = none
  double timeout_s = 30.0;
};

struct JobEnd {
  std::string id;
  SpoolState state = SpoolState::kDone;  // done or failed (FRAMEMILL_JOB_STATE: its Name())
  std::string job_dir;  // the job's spool folder, holding result.json
};

// Runs the hook for `end` and waits for it (at most the hook's timeout). Ok when it ran and
// exited 0; otherwise a Status saying what happened (not found, exit code, signal, timed out),
// for the caller to log.
Status RunJobEndHook(const JobEndHook& hook, const JobEnd& end);

// The hooks of ended jobs, run in the order they ended on a thread of their own. Post returns
// at once. At most `max_waiting` wait: the hook of a job that ends while that many wait is
// dropped with a warning, so a burst of set-aside files cannot queue hours of hooks. The
// destructor lets the running hook end (its timeout bounds it) and drops the waiting ones,
// saying how many. Thread-safe.
class JobEndHooks {
 public:
  explicit JobEndHooks(JobEndHook hook, size_t max_waiting = 64);
  ~JobEndHooks();
  JobEndHooks(const JobEndHooks&) = delete;
  JobEndHooks& operator=(const JobEndHooks&) = delete;

  void Post(JobEnd end);  // no hook configured: nothing
  void WaitIdle();        // until none waits or runs
  int64_t dropped() const;

 private:
  void Loop();

  const JobEndHook hook_;
  const size_t max_waiting_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<JobEnd> waiting_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  bool quit_ GUARDED_BY(mu_) = false;
  int64_t dropped_ GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: started once the rest is made
};

}  // namespace framemill
