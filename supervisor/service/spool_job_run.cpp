#include "supervisor/service/spool_job_run.h"

#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/service/admission.h"
#include "supervisor/service/gpu_scheduler.h"
#include "supervisor/service/job_progress_sink.h"
#include "supervisor/cluster/slurm_backend.h"
#include "supervisor/spool/spool_requests.h"
#include "supervisor/report/job_result.h"

namespace framemill {
namespace {

// The reason code of a job whose handling crashed or killed the supervisor max_job_starts
// times (no StatusCode: the job never ends with it, the service files it so).
constexpr const char* kCrashedCode = "crashed";

}  // namespace

SpoolJobRun::SpoolJobRun(const SpoolJobContext& context, RunningJob* job)
    : ctx_(context),
      job_(job),
      id_(job->id),
      dir_(context.spool.JobDir(SpoolState::kActive, job->id)),
      started_(IsoNow()) {}

void SpoolJobRun::Run() {
  std::string what;
  try {
    RunClaimed();
    return;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  spdlog::error("job {}: its handling threw: {}", id_, what);
  ctx_.metrics.EndRun(id_, {}, /*finished=*/false);  // its live figures leave the metrics
  try {
    ctx_.spool.File(id_, false,
                    FailureResult(id_, StatusCodeName(StatusCode::kInternal),
                                  "the supervisor's handling of this job threw: " + what));
  } catch (const std::exception& e) {
    spdlog::error("job {}: cannot file it: {}", id_, e.what());
  }
}

void SpoolJobRun::RunClaimed() {
  if (!CountStart() || !Accept()) return;
  const JobSpec& job = *spec_;
  spdlog::info("job {} for uid {}: {} -> {} with {} (start {} of at most {})", id_,
               submitter_->uid, job.input, job.output, job.model, starts_,
               ctx_.config.max_job_starts);
  ctx_.metrics.Write();  // the job is active
  const uint64_t start_ms = MonotonicMs();
  JobProgressSink progress(id_, dir_, job_->gpus, start_ms, ctx_.stop, job_->stop);
  progress.set_reader(submitter_->uid);
  std::vector<DispatchStats> attempts;  // worker counts of each ended attempt, for the metrics
  JobReportFile report_file;
  JobOptions options = Options(&attempts, &report_file);
  // The report beside the output replaces a file there only where the submitter could.
  const Status report_allowed =
      CheckMayWriteOutput(*submitter_, job.output + ".report.html", /*overwrite=*/true);
  options.write_report = report_allowed.ok();
  options.on_progress = [&](const JobProgress& p) {
    job_->alive_ms.store(MonotonicMs());
    ctx_.metrics.NoteProgress(id_, p, start_ms, attempts);
    progress.Report(p);
  };

  const bool slurm = ctx_.config.backend == Backend::kSlurm;
  Result<JobReport> report =
      slurm ? RunOnSlurm(dir_ + "/job.json", job, ctx_.config, progress.job_stop(), options)
            : RunJob(job, ctx_.config, progress.job_stop(), options);
  const bool stalled = job_->stalled.load() && !report.ok();
  if ((progress.cancelled() || stalled) && slurm) (void)CancelSlurmJobs(dir_ + "/job.json");
  if (stalled) {
    report = Status(StatusCode::kTimedOut,
                    "the job showed no life for " +
                        std::to_string(static_cast<int64_t>(ctx_.config.job_stall_timeout_s)) +
                        " s (job_stall_timeout_s) and was stopped (it ended with: " +
                        report.status().message() + ")");
  }
  ctx_.metrics.EndRun(id_, attempts, report.ok());
  if (!report.ok() && report.status().code() == StatusCode::kCancelled && !progress.cancelled()) {
    ctx_.spool.LowerStarts(id_);  // an orderly stop is no crash
    spdlog::info("job {} stopped; its finished segments stay for the next start", id_);
    return;
  }
  nlohmann::json result = EndingResult(report, progress.cancelled(), options.workspace,
                                       report_file, report_allowed);
  if (!job_->gpus.empty()) result["service_gpus"] = job_->gpus;
  result["submitter"] = submitter_->ToJson();
  result["starts"] = starts_;
  ctx_.spool.File(id_, report.ok(), result);
}

bool SpoolJobRun::CountStart() {
  // Counted before anything of the job is read: a job whose parsing kills the supervisor counts.
  Result<int> starts = ctx_.spool.RaiseStarts(id_);
  if (!starts.ok() && starts.status().code() == StatusCode::kNoSpace) {
    // The spool is full (ServiceSpool pauses): the job stays in active/ and starts again later.
    spdlog::warn("job {}: cannot count its start ({}); it waits in active/ for space", id_,
                 starts.status().message());
    return false;
  }
  if (!starts.ok()) {
    ctx_.spool.File(id_, false, FailureResult(id_, starts.status()));
    return false;
  }
  starts_ = *starts;
  if (starts_ <= ctx_.config.max_job_starts) return true;
  std::string message = "the supervisor crashed or was killed while running this job " +
                        std::to_string(starts_ - 1) + " times; not resumed again";
  spdlog::error("job {}: {}", id_, message);
  // Its finished segments stay (a crash is retryable: framemill retry).
  const bool keep = ctx_.config.failed_work_keep_days > 0;
  nlohmann::json result = FailureResult(id_, kCrashedCode, message);
  result["work_kept"] = keep;
  result["starts"] = starts_ - 1;
  if (!keep) (void)RemoveTree(dir_ + "/work");
  ctx_.spool.File(id_, false, result);
  return false;
}

bool SpoolJobRun::Accept() {
  Result<Submitter> submitter = JobOwner(dir_);
  if (!submitter.ok()) {
    ctx_.spool.File(id_, false, FailureResult(id_, submitter.status()));
    return false;
  }
  const Config& config = ctx_.config;
  Result<JobSpec> job = LoadJobFile(dir_ + "/job.json", config.defaults);
  Status allowed = job.ok() ? Status::Ok() : job.status();
  if (allowed.ok()) allowed = CheckMayRead(*submitter, job->input, "input");
  if (allowed.ok()) allowed = CheckMayRead(*submitter, job->model, "model");
  if (allowed.ok()) allowed = CheckMayWriteOutput(*submitter, job->output, job->overwrite);
  if (allowed.ok() && !config.service_gpus.empty()) {
    allowed = CheckGpuAsk(config.service_gpus, {job->settings.gpus, job->model});
  }
  if (!allowed.ok()) {
    spdlog::warn("job {} rejected: {}", id_, allowed.ToString());
    nlohmann::json result = FailureResult(id_, allowed);
    result["submitter"] = submitter->ToJson();
    (void)RemoveTree(dir_ + "/work");
    ctx_.spool.File(id_, false, result);
    return false;
  }
  // The GPUs the service gave it: the job's own list, or a share of the free ones.
  ShareSettings(job_->gpus, ctx_.gpu_labels, &job->settings);
  submitter_ = std::move(*submitter);
  spec_ = std::move(*job);
  return true;
}

JobOptions SpoolJobRun::Options(std::vector<DispatchStats>* attempts,
                                JobReportFile* report_file) {
  const ServiceSpool& spool = ctx_.spool;
  JobOptions options;
  options.workspace = dir_ + "/work";
  options.timeline = dir_ + "/timeline.jsonl";
  // active/<id>/ is gone once the job is filed: the report names where the timeline will be.
  options.timeline_filed_done = spool.JobDir(SpoolState::kDone, id_) + "/timeline.jsonl";
  options.timeline_filed_failed = spool.JobDir(SpoolState::kFailed, id_) + "/timeline.jsonl";
  options.warm = job_->workers.warm();
  options.spares = job_->workers.spares();
  options.on_spare_taken = [this](WorkerPool* from) {
    job_->workers.SpareTaken(from);
    ctx_.wake_loop();  // the loop starts the next spare
  };
  options.worker_log_dir = job_->workers.log_dir();
  options.submitter = submitter_->rights();
  options.output_reader_uid = submitter_->uid;
  options.attempt_dispatch = attempts;
  options.report_file = report_file;
  return options;
}

nlohmann::json SpoolJobRun::EndingResult(const Result<JobReport>& report, bool cancelled,
                                         const std::string& workspace,
                                         const JobReportFile& report_file,
                                         const Status& report_allowed) {
  nlohmann::json result;
  if (report.ok()) {
    const JobReport& r = *report;
    result = DoneResultJson(id_, r, started_, IsoNow());
    (void)RemoveTree(workspace);  // the output is complete; segments are not needed
    spdlog::info("job {} done: {} frames in {:.1f} s", id_, r.frames, r.seconds);
  } else {
    Status s = cancelled ? Status(StatusCode::kCancelled, "cancelled by request") : report.status();
    result = FailureResult(id_, s);
    result["started_at"] = started_;
    // A failure that a retry may mend keeps the finished segments for `framemill retry` (for
    // failed_work_keep_days); anything else clears them now.
    bool keep = RetryableReason(StatusCodeName(s.code())) && ctx_.config.failed_work_keep_days > 0;
    if (!keep) (void)RemoveTree(workspace);
    result["work_kept"] = keep;
    spdlog::warn("job {} failed: {}", id_, s.ToString());
  }
  if (!report_file.path.empty()) result["report"] = report_file.path;
  if (!report_allowed.ok()) {
    result["warnings"].push_back("job report not written: " + report_allowed.message());
  } else if (!report.ok() && !report_file.warning.empty()) {  // a finished job's has it already
    result["warnings"].push_back(report_file.warning);
  }
  return result;
}

}  // namespace framemill
