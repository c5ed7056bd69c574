#include "supervisor/job/job_runner.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/job/job_files.h"
#include "supervisor/job/job_run.h"
#include "supervisor/job/space_wait.h"
#include "supervisor/media/output_muxer.h"

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

namespace {

// Where a job that ran out of space waits, and for how long: the episode restarts (a new
// deadline, the backoff from the start) once a run finished a segment, so a disk that fills
// now and then never fails a job that moves on between.
class NoSpacePause {
 public:
  explicit NoSpacePause(const Config& config) : wait_ms_(config.no_space_wait_s * 1000) {}

  // After a run that ended with `s` (kNoSpace) and left `files`: waits, then Ok to run the job
  // again, or the status it ends with (`s` itself when it does not wait).
  // `at_failure`: the free space read when the run failed.
  Status Wait(const Status& s, const JobFiles& files, const std::optional<SpaceNeeded>& need,
              const std::optional<SpaceReading>& at_failure, const std::atomic<bool>& stop,
              const std::function<void(const std::string&, double)>& report) {
    if (s.code() != StatusCode::kNoSpace || wait_ms_ <= 0 || stop.load()) return s;
    if (!episode_ || files.segments_done > segments_at_start_) {
      episode_ = true;
      deadline_ms_ = MonotonicMs() + static_cast<uint64_t>(wait_ms_);
      segments_at_start_ = files.segments_done;
      retry_ = 0;
    }
    SpaceWatch watch = JobSpaceWatch(files);
    watch.need = need;
    return WaitForSpace(watch, s, at_failure, deadline_ms_, retry_++, stop, report);
  }

 private:
  const double wait_ms_;
  bool episode_ = false;
  uint64_t deadline_ms_ = 0;
  int64_t segments_at_start_ = 0;
  int retry_ = 0;
};

}  // namespace

Result<JobReport> RunJob(const JobSpec& job, const Config& config, const std::atomic<bool>& stop,
                         const JobOptions& options) {
  JobFiles files;
  if (options.submitter) files.user = &*options.submitter;
  if (!options.workspace.empty()) files.placed_note = options.workspace + "/" + kPlacedOutputNote;
  std::vector<std::string> faults;
  std::optional<Result<JobReport>> result;
  // The last progress report, told again while the job waits for space.
  JobProgress last;
  JobOptions run_options = options;
  run_options.on_progress = [&](const JobProgress& p) {
    last = p;
    last.dispatch = nullptr;
    if (options.on_progress) options.on_progress(p);
  };
  const auto report_wait = [&](const std::string& why, double waited_s) {
    last.waiting = why;
    last.waiting_s = waited_s;
    last.workers.clear();
    if (options.on_progress) options.on_progress(last);
    last.waiting.clear();
  };
  NoSpacePause no_space(config);
  int crash_retries = 0;
  for (int run_index = 0;; ++run_index) {
    std::optional<SpaceNeeded> need;
    std::optional<SpaceReading> space_at_failure;
    bool decoded_short = false;
    {
      JobRun run(job, config, stop, run_options, &files);
      result.emplace(run.Run());
      if (!result->ok() && result->status().code() == StatusCode::kNoSpace) {
        // Read now, before the run's destructor: space freed meanwhile counts as returned.
        const SpaceReading now = ReadSpace(JobSpaceWatch(files));
        space_at_failure = run.SpaceAtFailure() ? Lowest(*run.SpaceAtFailure(), now) : now;
      }
      files.segments_done = run.SegmentsDone();
      need = run.SpaceNeed();
      decoded_short = run.DecodedShort();
      if (options.attempt_dispatch != nullptr) options.attempt_dispatch->push_back(run.Dispatch());
    }
    if (result->ok()) {
      JobReport& r = **result;
      r.attempts = run_index + 1;
      r.faults_retried.insert(r.faults_retried.begin(), faults.begin(), faults.end());
      break;
    }
    if (result->status().code() == StatusCode::kNoSpace) {
      Status waited =
          no_space.Wait(result->status(), files, need, space_at_failure, stop, report_wait);
      if (waited.ok()) {
        const std::string& why = result->status().message();
        if (faults.empty() || faults.back() != why) faults.push_back(why);
        continue;
      }
      if (waited.code() != StatusCode::kCancelled) result.emplace(waited);
    }
    const Status& s = result->status();
    // The decoder showed fewer pictures than the packets promise: a damaged picture inside the
    // stream (a player skips it) or a file cut short. Once, the job runs again with the probe
    // decoding every picture first, which leaves out those that do not decode and keeps the
    // others' times; its new plan starts the job over (frames after the gap were rendered on the
    // wrong times). Not for a part: every part and the stitch must share one plan.
    if (decoded_short && !run_options.decode_every_picture && options.part.whole() &&
        !stop.load()) {
      run_options.decode_every_picture = true;
      spdlog::warn("{}; decoding every picture of the input to learn which do not decode, then "
                   "running the job again",
                   s.ToString());
      faults.push_back(s.message());
      continue;
    }
    if (!IsCrash(s) || crash_retries >= config.crash_retries || stop.load()) break;
    ++crash_retries;
    spdlog::warn("{}; running the job again, keeping its finished segments (retry {} of {})",
                 s.ToString(), crash_retries, config.crash_retries);
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
