// The JobOptions of `framemill run JOB --part I/N` and `framemill stitch JOB`: where a part keeps
// its done-log, segments and timeline (job/parts_dir.h), and what it leaves out (the HTML report,
// which belongs to the whole job).
#pragma once

#include <string>

#include "common/status.h"
#include "supervisor/job/job_runner.h"

namespace framemill {

// `part` is "I/N" (part_plan.h ParsePartRef). Errors: kInvalidJob for a malformed part.
Status SetPartOptions(const std::string& job_path, const std::string& part, JobOptions* options);

}  // namespace framemill
