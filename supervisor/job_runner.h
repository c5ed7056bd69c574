// Runs one job from start to verified output: probe, plan, start workers, decode into the arena,
// dispatch chunks, encode segments, mux, verify. Used by `framemill run` (and later by the
// spool service). Returns only after every child process is gone and every shared-memory object
// it created is removed, whatever the outcome.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/job_spec.h"
#include "common/status.h"
#include "supervisor/dispatcher.h"

namespace framemill {

struct JobReport {
  std::string output;
  int64_t frames = 0;
  int64_t chunks = 0;
  int64_t segments = 0;
  int in_width = 0, in_height = 0, out_width = 0, out_height = 0;
  double seconds = 0.0;
  std::string timeline;     // the job's memory timeline (JSON lines)
  DispatchStats dispatch;   // workers started, recycles, crashes, kills, retries, peaks
};

// `stop` is polled: once true the job ends with kCancelled.
Result<JobReport> RunJob(const JobSpec& job, const Config& config, const std::atomic<bool>& stop);

}  // namespace framemill
