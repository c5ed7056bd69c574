// `framemill stitch`: a job rendered in parts (supervisor/plan/part_plan.h) joined into its
// output. No workers and no decoding: every part's done-log under `parts_dir` must list all its
// segments (read, never written); they are joined, muxed with the source's audio and the rest,
// verified and renamed into place as a whole run's are. Scratch files go to `parts_dir`.
#pragma once

#include <atomic>
#include <string>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "common/user_rights.h"
#include "supervisor/report/job_result.h"

namespace framemill {

// With a `submitter`, every file the job names is checked against that user's rights as it is
// opened (JobOptions::submitter).
Result<JobReport> StitchJob(const JobSpec& job, const Config& config, const std::atomic<bool>& stop,
                            const std::string& parts_dir, const UserRights* submitter = nullptr);

}  // namespace framemill
