#include "supervisor/report/report_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/log.h"

namespace framemill {
namespace {

std::string Fixed(double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f %s", v, unit);
  return buf;
}

std::string Size(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

}  // namespace

std::string ReportName(const std::string& output_name) { return output_name + ".report.html"; }

ReportData MakeReportData(const JobSpec& job, const JobReport& r, const Status& outcome,
                          std::vector<TimelineRecord> timeline, std::vector<ReportStill> stills,
                          const std::string& stills_note, const std::string& timeline_path) {
  ReportData d;
  d.title = job.output;
  d.failed = !outcome.ok();
  // The rate is this run's: the frames it rendered over its time, not those an earlier run kept.
  const int64_t rendered = r.frames - r.frames_resumed;
  const bool resumed = r.segments_resumed > 0;
  if (!outcome.ok()) {
    d.outcome = "failed: " + outcome.ToString();
  } else if (resumed) {
    d.outcome = "done (resumed): " + std::to_string(r.frames) + " frames, " +
                std::to_string(rendered) + " of them rendered by this run in " +
                Fixed(r.seconds, "s");
  } else {
    d.outcome = "done: " + std::to_string(r.frames) + " frames in " + Fixed(r.seconds, "s");
  }
  const DispatchStats& s = r.dispatch;
  int recycles = 0;
  std::string by_reason;
  for (const auto& [reason, n] : s.recycles) {
    recycles += n;
    by_reason += (by_reason.empty() ? " (" : ", ") + reason + " " + std::to_string(n);
  }
  if (!by_reason.empty()) by_reason += ")";
  d.facts = {{"input", job.input}, {"output", job.output}, {"model", job.model}};
  if (resumed) {
    d.facts.push_back({"resumed", std::to_string(r.segments_resumed) + " segments (" +
                                      std::to_string(r.frames_resumed) +
                                      " frames) kept from an earlier run; this run rendered " +
                                      std::to_string(rendered) + " frames"});
  }
  if (outcome.ok()) {
    d.facts.push_back({"frames", std::to_string(r.frames) + ", " + std::to_string(r.chunks) +
                                     " chunks, " + std::to_string(r.segments) + " segments"});
    d.facts.push_back({"picture", Size(r.in_width, r.in_height) + " (" + r.worker_input_format +
                                      " to the workers) -> " + Size(r.out_width, r.out_height) +
                                      " " + r.output_pix_fmt});
    d.facts.push_back({"speed", Fixed(FramesPerSecond(rendered, r.seconds), "frames/s") +
                                    (resumed ? " (this run's frames over its time)" : "")});
    if (r.faces.present) d.facts.push_back({"faces", r.faces.Summary()});
  }
  d.facts.push_back({"workers", std::to_string(s.workers_started) + " started, " +
                                    std::to_string(recycles) + " recycled" + by_reason + ", " +
                                    std::to_string(s.crashes) + " crashed, " +
                                    std::to_string(s.kills) + " killed; " +
                                    std::to_string(s.chunk_retries) + " chunks retried"});
  if (!r.worker_sandbox.empty()) d.facts.push_back({"worker sandbox", r.worker_sandbox});
  d.facts.push_back({"worker start", s.StartupSummary()});
  for (const std::string& w : r.warnings) d.facts.push_back({"warning", w});
  for (const std::string& f : r.faults_retried) d.facts.push_back({"survived", f});
  const std::string& timeline_file = timeline_path.empty() ? r.timeline : timeline_path;
  if (!timeline_file.empty()) d.facts.push_back({"memory timeline", timeline_file});
  d.timeline = std::move(timeline);
  d.stages = r.stages;
  d.stills = std::move(stills);
  d.stills_note = stills_note;
  return d;
}

Status WriteReportFile(int dir_fd, const std::string& name, const std::string& html,
                       uint32_t reader_uid) {
  Result<CreatedFile> f = CreateExclusiveAt(dir_fd, "." + name + ".", ".tmp", 0644);
  if (!f.ok()) return f.status();
  auto fail = [&](const std::string& what) {
    Status s(StatusCode::kIo, what + " " + name + ": " + std::strerror(errno));
    ::unlinkat(dir_fd, f->name.c_str(), 0);
    return s;
  };
  const char* p = html.data();
  size_t left = html.size();
  while (left > 0) {
    ssize_t n = ::write(f->fd.get(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(f->fd.get()) != 0) return fail("fsync");
  if (reader_uid != UINT32_MAX) {
    Status acl = GrantReadAcl(f->fd.get(), reader_uid);
    if (!acl.ok()) spdlog::warn("{}: {}", name, acl.message());
  }
  Status renamed = RenameCheckedAt(dir_fd, f->name, f->fd.get(), name, RenameMode::kReplace);
  if (!renamed.ok()) ::unlinkat(dir_fd, f->name.c_str(), 0);
  return renamed;
}

}  // namespace framemill
