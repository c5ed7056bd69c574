// The service's Slurm backend (config "backend": "slurm"): a spool job is submitted as
// config.slurm_parts parts and a stitch (slurm_commands.h), and followed until its stitch job
// has left the queue. The spool's job folder is the job's shared directory: it must be on
// storage every node sees (README.md, "Shared storage").
#pragma once

#include <atomic>
#include <string>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/job/job_runner.h"
#include "supervisor/report/job_result.h"

namespace framemill {

// Submits the job in `job_path` (at most one part per segment), or follows the Slurm jobs of an
// earlier submission that are still queued (a service restarted while they ran), calling
// options.on_progress about every config.slurm_poll_s with the frames the parts' done-logs list.
// Returns the report once the stitch job has put the output in place. `stop` ends the wait with
// kCancelled and leaves the Slurm jobs as they are (CancelSlurmJobs ends them). Errors: the
// plan's and sbatch's; kWorkerFailed when the stitch job ended without the output, or can never
// start because a part failed (the message names the logs). The first time a part fails, once
// the array's other tasks have ended, the job is resumed (ResumeOnSlurm, slurm_resume.h) and
// followed under its new ids; a second failure, or a refused resume, is the error.
Result<JobReport> RunOnSlurm(const std::string& job_path, const JobSpec& job, const Config& config,
                             const std::atomic<bool>& stop, const JobOptions& options);

// scancel of the array and stitch jobs of the submission recorded beside `job_path`; ok when
// there is none.
Status CancelSlurmJobs(const std::string& job_path);

}  // namespace framemill
