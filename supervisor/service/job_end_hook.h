// The config's `on_job_end` hook: a program the service runs once for every job that ends (done,
// failed, cancelled, or set aside as no job), for notification scripts.
//
// The program is run directly (no shell), as the service's user, with the hook's arguments from
// the config followed by the path of the job's result.json; its environment adds FRAMEMILL_JOB_ID
// and FRAMEMILL_JOB_STATE (done | failed). It gets no stdin; its stdout and stderr go to
// on_job_end.log in the job's spool folder. It is killed (SIGKILL) after `on_job_end_timeout_s`;
// the service waits for it, so a hook that must do slow work should hand it off. A hook that
// fails is logged, never fails the job.
#pragma once

#include <string>
#include <vector>

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

}  // namespace framemill
