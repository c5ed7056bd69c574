// One claimed spool job, run by the service on a job thread (job_slots.h) from its claim to its
// filing: count the start (a job the supervisor crashed on max_job_starts times is filed as
// `crashed`), accept it (its owner, the paths it may use, the GPUs it names; its share of the
// service's GPUs), run it (RunJob, or RunOnSlurm with the Slurm backend) with the worker cache's
// lease, its progress reported (job_progress_sink.h) and the metrics fed, then file its
// result.json under done/ or failed/ (an orderly stop files nothing: it resumes at the next
// start). Every exception from its handling is caught: such a job is filed as failed with the
// exception's text.
//
// Not thread-safe: one object per job, used by the job's thread only. It meets the loop only
// through the RunningJob (its atomics and lease), the ServiceSpool and the ServiceMetrics.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/job_file.h"
#include "supervisor/service/job_slots.h"
#include "supervisor/service/service_metrics.h"
#include "supervisor/service/service_spool.h"
#include "supervisor/spool/submitter.h"
#include "supervisor/job/job_runner.h"

namespace framemill {

// What a job's run uses of the service; every part outlives the run.
struct SpoolJobContext {
  const Config& config;
  const std::atomic<bool>& stop;  // the service's stop: the job stops and stays in active/
  bool gpu_labels;                // FRAMEMILL_TEST_GPU_LABELS (admission.h ShareSettings)
  ServiceSpool& spool;
  ServiceMetrics& metrics;
  std::function<void()> wake_loop;  // a worker took a lent spare: the loop starts the next
};

class SpoolJobRun {
 public:
  SpoolJobRun(const SpoolJobContext& context, RunningJob* job);
  void Run();  // to the job's end; never throws

 private:
  void RunClaimed();
  // Counts this start; files the job as failed (false) when that fails or it crashed the
  // supervisor too often.
  bool CountStart();
  // Reads and checks the job; files it as failed (false) when it is not allowed.
  bool Accept();
  JobOptions Options(std::vector<DispatchStats>* attempts, JobReportFile* report_file);
  // result.json of the job that ended with `report` (removing the work it no longer needs).
  nlohmann::json EndingResult(const Result<JobReport>& report, bool cancelled,
                              const std::string& workspace, const JobReportFile& report_file,
                              const Status& report_allowed);

  const SpoolJobContext& ctx_;
  RunningJob* const job_;
  const std::string& id_;
  const std::string dir_;      // active/<id>/
  const std::string started_;  // ISO time
  int starts_ = 0;             // this start's number (spool.h RaiseStarts)
  std::optional<Submitter> submitter_;  // by Accept
  std::optional<JobSpec> spec_;          // by Accept: checked, on its share of the GPUs
};

}  // namespace framemill
