#include "supervisor/cluster/slurm_backend.h"

#include <chrono>
#include <thread>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "supervisor/cluster/slurm_commands.h"
#include "supervisor/cluster/slurm_resume.h"
#include "supervisor/job/parts_dir.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace {

// squeue's "STATE REASON" of job `id`; "" once it has left the queue.
std::string QueueState(const std::string& id) {
  Result<CommandOutput> r = RunAndCapture({"squeue", "-h", "-j", id, "-o", "%T %r"});
  if (!r.ok() || r->exit_code != 0) return "";
  return r->out.substr(0, r->out.find('\n'));
}

// Whether a task of `array_job` is still queued or running.
bool TasksQueued(const std::string& array_job) {
  for (const auto& [task, state] : SlurmTaskStates(array_job)) {
    if (!SlurmStateEnded(state)) return true;
  }
  return false;
}

}  // namespace

Status CancelSlurmJobs(const std::string& job_path) {
  const SlurmIds ids = RecordedSlurmIds(ResolveSlurmPaths(job_path));
  for (const std::string& id : {ids.stitch_job, ids.array_job}) {
    if (id.empty()) continue;
    Result<CommandOutput> r = RunAndCapture({"scancel", id});
    if (!r.ok()) return r.status().WithContext("scancel " + id);
  }
  return Status::Ok();
}

Result<JobReport> RunOnSlurm(const std::string& job_path, const JobSpec& job, const Config& config,
                             const std::atomic<bool>& stop, const JobOptions& options) {
  const uint64_t t0 = MonotonicMs();
  SlurmPaths paths = ResolveSlurmPaths(job_path);
  const UserRights* submitter = options.submitter ? &*options.submitter : nullptr;
  if (submitter != nullptr) {
    paths.submitter = std::to_string(submitter->uid) + ":" + std::to_string(submitter->gid);
  }
  const std::string& parts_dir = paths.parts_dir;
  const std::string& logs = paths.logs_dir;
  SlurmIds ids = RecordedSlurmIds(paths);
  Result<PartsPlan> plan = Status(StatusCode::kInvalidJob, "no parts plan");
  if (!ids.stitch_job.empty() && !QueueState(ids.stitch_job).empty()) {
    spdlog::info("{}: following Slurm jobs {} (parts) and {} (stitch) submitted earlier", job_path,
                 ids.array_job, ids.stitch_job);
    plan = ReadPartsPlan(parts_dir);
    if (!plan.ok()) return plan.status();
  } else {
    plan = PlanJobParts(job, config, config.slurm_parts, parts_dir, /*at_most_segments=*/true,
                        submitter);
    if (!plan.ok()) return plan.status();
    Result<SlurmIds> submitted = SubmitToSlurm(paths, job, *plan, config.slurm_options);
    if (!submitted.ok()) return submitted.status();
    ids = *submitted;
    spdlog::info("{}: submitted to Slurm: {} parts (array job {}), stitch job {}", job_path,
                 plan->parts.size(), ids.array_job, ids.stitch_job);
  }
  const auto poll = std::chrono::milliseconds(static_cast<int64_t>(config.slurm_poll_s * 1000));
  bool resumed = false;  // at most one resume per job
  std::string resume_error;
  for (;;) {
    if (options.on_progress) {
      JobProgress p;
      p.frames_total = plan->frame_count;
      p.frames_done = PathExists(parts_dir) ? PartsFramesDone(parts_dir, job, *plan) : 0;
      p.frames_written = p.frames_done;  // a part's finished segments are written
      p.segments_total = plan->segments;
      options.on_progress(p);
    }
    if (stop.load()) {
      return Status(StatusCode::kCancelled, "stopped; Slurm jobs " + ids.array_job + " and " +
                                                ids.stitch_job + " go on");
    }
    const std::string state = QueueState(ids.stitch_job);
    if (state.empty()) break;
    if (state.find("DependencyNeverSatisfied") != std::string::npos) {
      // Once per job: the unfinished parts again, then a new stitch (slurm_resume.h), after
      // the array's other tasks have ended.
      if (!resumed && !TasksQueued(ids.array_job)) {
        resumed = true;
        Result<SlurmResumed> again = ResumeOnSlurm(paths, job, config.slurm_options);
        if (again.ok()) {
          spdlog::warn("{}: a part of Slurm array job {} failed; resubmitted part(s) as array "
                       "job {}, stitch job {}",
                       job_path, ids.array_job, again->ids.array_job, again->ids.stitch_job);
          ids = again->ids;
          continue;
        }
        resume_error = "; resuming failed: " + again.status().ToString();
      }
      if (resumed) {
        (void)RunAndCapture({"scancel", ids.stitch_job});
        return Status(StatusCode::kWorkerFailed,
                      "a part (Slurm array job " + ids.array_job + ") failed" +
                          (resume_error.empty() ? " again after a resume" : resume_error) +
                          ", so the stitch cannot run; see " + logs);
      }
    }
    std::this_thread::sleep_for(poll);
  }
  // The stitch removes the parts once the output is verified and in place.
  if (PathExists(parts_dir) || !PathExists(job.output)) {
    const std::string log = logs + "/slurm-" + ids.stitch_job + "-stitch.out";
    return Status(StatusCode::kWorkerFailed, "the Slurm stitch job " + ids.stitch_job +
                                                 " ended without the output: " +
                                                 LastLinesOfFile(log, 4));
  }
  JobReport r;
  r.output = job.output;
  r.frames = plan->frame_count;
  r.segments = plan->segments;
  r.seconds = static_cast<double>(MonotonicMs() - t0) / 1000.0;
  r.warnings.push_back("run on Slurm: array job " + ids.array_job + ", stitch job " +
                       ids.stitch_job + "; logs in " + logs);
  return r;
}

}  // namespace framemill
