#include "supervisor/job/run_report.h"

#include <vector>

#include "common/log.h"
#include "common/user_rights.h"
#include "supervisor/report/report_file.h"

namespace framemill {

JobReportFile WriteRunReport(const JobSpec& job, const JobOptions& options, const JobFiles& files,
                             const JobReport& report, const Status& outcome,
                             const Timeline& timeline, const StillCapture* stills) {
  std::string note = "the job ended before its frames reached the arena";
  std::vector<ReportStill> taken;
  if (stills != nullptr) {
    taken = stills->Encode(&note);
  } else if (!StillsAvailable()) {
    note = "this build has no OpenCV";
  }
  const std::string& filed =
      outcome.ok() ? options.timeline_filed_done : options.timeline_filed_failed;
  const std::string html = RenderReportHtml(
      MakeReportData(job, report, outcome, timeline.records(), std::move(taken), note, filed));
  // Replaced only where the submitter could (checked again now: the name was checked at start).
  Status written = files.user != nullptr ? CheckMayReplaceAt(*files.user, files.output_dir.get(),
                                                             ReportName(files.output_name), "report")
                                         : Status::Ok();
  if (written.ok()) {
    written = WriteReportFile(files.output_dir.get(), ReportName(files.output_name), html,
                              options.output_reader_uid);
  }
  JobReportFile file;
  if (written.ok()) {
    file.path = job.output + ".report.html";
  } else {
    file.warning = "job report not written: " + written.message();
    spdlog::warn("{}: {}", job.output, file.warning);
  }
  return file;
}

}  // namespace framemill
