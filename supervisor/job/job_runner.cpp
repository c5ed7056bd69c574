#include "supervisor/job/job_runner.h"

#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "supervisor/job/job_files.h"
#include "supervisor/job/job_run.h"

namespace framemill {
namespace {

bool IsCrash(const Status& s) {
  return s.code() == StatusCode::kDecoderCrashed || s.code() == StatusCode::kEncoderCrashed;
}

}  // namespace

void WarmWorkers::Stop(int timeout_ms) {
  if (pool != nullptr) pool->StopAll(timeout_ms);
  pool.reset();
  arena = SharedMemory();
}

Result<JobReport> RunJob(const JobSpec& job, const Config& config, const std::atomic<bool>& stop,
                         const JobOptions& options) {
  JobFiles files;
  std::vector<std::string> faults;
  std::optional<Result<JobReport>> result;
  for (int attempt = 0;; ++attempt) {
    {
      JobRun run(job, config, stop, options, &files);
      result.emplace(run.Run());
      files.segments_done = run.SegmentsDone();
      if (options.attempt_dispatch != nullptr) options.attempt_dispatch->push_back(run.Dispatch());
    }
    if (result->ok()) {
      JobReport& r = **result;
      r.attempts = attempt + 1;
      r.faults_retried.insert(r.faults_retried.begin(), faults.begin(), faults.end());
      break;
    }
    const Status& s = result->status();
    if (!IsCrash(s) || attempt >= config.crash_retries || stop.load()) break;
    spdlog::warn("{}; running the job again, keeping its finished segments (retry {} of {})",
                 s.ToString(), attempt + 1, config.crash_retries);
    faults.push_back(s.message());
  }
  // Stopped: whatever failed on the way out (a decoder that took the terminal's SIGINT too) is
  // the stop's doing; the job ends cancelled, its work kept.
  if (!result->ok() && stop.load() && result->status().code() != StatusCode::kCancelled) {
    result.emplace(Status(StatusCode::kCancelled,
                          "stopped by signal (meanwhile: " + result->status().ToString() + ")"));
  }
  CloseJobFiles(&files, result->ok(), result->ok() ? Status::Ok() : result->status());
  return std::move(*result);
}

}  // namespace framemill
