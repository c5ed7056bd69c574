// The job report as a file: what RunJob knows of a job (its spec, its report so far, how it
// ended, its timeline and stills) turned into ReportData, and the page written beside the output
// as <output>.report.html like the job's other files: created exclusively under a random name,
// written, fsynced, granted to the submitter's uid (ACL) where the service asks, then renamed
// into place (replacing an older report of the same output).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/report/job_result.h"
#include "supervisor/report/report_html.h"

namespace framemill {

// The name of the report of output `output_name` (a base name): "<output_name>.report.html".
std::string ReportName(const std::string& output_name);

// The report's data. `outcome`: ok for a finished job, else why it failed. `report` holds what
// the job had measured when it ended (a failed job's is partial). A resumed job (segments an
// earlier run kept) says so, and its speed is this run's: the frames it rendered over its time.
// `timeline_path`: where the report says the memory timeline is, a path that stays valid after
// the run (the service files the job's folder elsewhere); "" = report.timeline.
ReportData MakeReportData(const JobSpec& job, const JobReport& report, const Status& outcome,
                          std::vector<TimelineRecord> timeline, std::vector<ReportStill> stills,
                          const std::string& stills_note, const std::string& timeline_path = "");

// Writes `html` as `name` in the directory `dir_fd` (see the file comment). `reader_uid`:
// granted read access through an ACL, UINT32_MAX = none (an ACL that fails is logged, not an
// error, as for the output). Errors: kIo.
Status WriteReportFile(int dir_fd, const std::string& name, const std::string& html,
                       uint32_t reader_uid);

}  // namespace framemill
