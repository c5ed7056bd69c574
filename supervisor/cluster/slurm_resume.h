// `framemill slurm resume JOB [-- sbatch options]`: finishes a Slurm submission (slurm_commands.h)
// whose stitch can no longer start. A task cancelled (`scancel ARRAY_I`) or failed (its
// `framemill run --part` exited non-zero) leaves the stitch job pending for good (Slurm's reason
// `DependencyNeverSatisfied`); resume cancels that stitch, submits a new array job of only the
// parts whose done-logs are not complete (each resumes from its done-log) and a new stitch job
// `afterok` on it, and records the new ids in slurm.json, the earlier ones kept in its
// `history`.
#pragma once

#include <string>
#include <vector>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/cluster/slurm_commands.h"

namespace framemill {

// What a resume submitted: the new array job ("" when every part had finished and only the
// stitch was left to run), the new stitch job, and the parts (1-based) it runs again.
struct SlurmResumed {
  SlurmIds ids;
  std::vector<int> parts;
};

// Whether Slurm's job state `state` ("FAILED", "CANCELLED by 0", ...) is one after which the job
// or array task neither runs nor will run again.
bool SlurmStateEnded(const std::string& state);

// Resumes the submission recorded in `paths` (slurm_commands.h). `extra` = sbatch
// options; empty = those given to the submission. Refuses, with a message that says why and
// what to do:
//   kInvalidJob    nothing was submitted (no slurm.json) or the parts plan is gone while the
//                  output is missing;
//   kOutputInvalid every part has finished and the output exists (nothing to resume);
//   kWorkerFailed  tasks of the array job are still queued or running (names them), or the
//                  stitch job is running.
// Other errors: sbatch's and scancel's (kIo), writing slurm.json.
Result<SlurmResumed> ResumeOnSlurm(const SlurmPaths& paths, const JobSpec& job,
                                   const std::vector<std::string>& extra);

// The command: loads the job, resumes, prints the new ids (array then stitch, one a line; the
// stitch alone when no part was left) or the refusal; returns the exit code.
int SlurmResumeCommand(const std::string& job_path, const std::vector<std::string>& extra,
                       const std::string& config_path, const Config& config);

}  // namespace framemill
