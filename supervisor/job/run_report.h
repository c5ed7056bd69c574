// A run's HTML report, <output>.report.html (supervisor/report/report_file.h), written beside
// the output for every run that started workers, whatever its outcome: one that cannot be
// written is a warning, never a failed job.
#pragma once

#include <string>

#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/job/job_files.h"
#include "supervisor/job/job_options.h"
#include "supervisor/report/job_result.h"
#include "supervisor/report/report_stills.h"
#include "supervisor/workers/timeline.h"

namespace framemill {

// Writes the report of `report` (the run's figures) ending with `outcome`; `stills` are null
// when the run ended before its frames reached the arena. Returns where it went or why not.
JobReportFile WriteRunReport(const JobSpec& job, const JobOptions& options, const JobFiles& files,
                             const JobReport& report, const Status& outcome,
                             const Timeline& timeline, const StillCapture* stills);

}  // namespace framemill
