#include "supervisor/job/stitch_job.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>

#include "common/clock.h"
#include "common/log.h"
#include "supervisor/job/job_files.h"
#include "supervisor/job/job_output.h"
#include "supervisor/job/job_state.h"
#include "supervisor/job/output_plan.h"
#include "supervisor/job/parts_dir.h"
#include "supervisor/job/prepared_job.h"
#include "supervisor/media/source_intake.h"
#include "supervisor/plan/part_plan.h"

namespace framemill {
namespace {

// Every part's segments, in order, from their done-logs; each part must be finished.
Result<SegmentList> PartSegments(const JobSpec& job, const JobPlan& plan,
                                 const std::string& parts_dir) {
  Result<PartsPlan> parts = ReadPartsPlan(parts_dir);
  if (!parts.ok()) return parts.status();
  Result<PartsPlan> mine = MakePartsPlan(job, plan, static_cast<int>(parts->parts.size()));
  if (!mine.ok()) return mine.status();
  FM_RETURN_IF_ERROR(SamePartsPlan(*parts, *mine));
  SegmentList list;
  const int count = static_cast<int>(parts->parts.size());
  for (int i = 0; i < count; ++i) {
    const PartRange& r = parts->parts[static_cast<size_t>(i)];
    const PartRef ref{i + 1, count};
    JobState st(PartDir(parts_dir, ref), job, plan, plan.chunks_per_segment, r.first_segment,
                r.end_segment());
    FM_RETURN_IF_ERROR(st.Load(/*write_back=*/false));
    if (!st.all_done()) {
      return Status(StatusCode::kInvalidJob,
                    "part " + ref.ToString() + " is not finished: " + std::to_string(st.done()) +
                        " of its " + std::to_string(r.segment_count) + " segments are done");
    }
    for (int64_t si = r.first_segment; si < r.end_segment(); ++si) {
      list.paths.push_back(st.SegmentPath(si));
      list.frames.push_back(plan.segments[si].frames);
    }
  }
  return list;
}

Result<JobReport> Stitch(const JobSpec& job, const Config& config, const std::string& parts_dir,
                         JobFiles* files) {
  const uint64_t t0 = MonotonicMs();
  const uint64_t t_prepare = MonotonicUs();
  Result<PreparedJob> prepared = PrepareJob(job, config, files);
  if (!prepared.ok()) return prepared.status();
  const PreparedJob& p = *prepared;
  JobReport report;
  report.warnings = p.warnings;
  report.stages.prepare_s = static_cast<double>(MonotonicUs() - t_prepare) / 1e6;
  const uint64_t t_mux = MonotonicUs();
  Result<SegmentList> segments = PartSegments(job, p.plan, parts_dir);
  if (!segments.ok()) return segments.status();
  // The segments' own size is the output's (the model's scale, found by the parts' workers).
  // The parts wrote them: no roots.
  Result<MediaInfo> first =
      ProbeOwnFile(config.ffprobe, segments->paths.front(), /*frame_times=*/false);
  if (!first.ok()) return first.status().WithContext("stitch");
  const OutputSize out{first->video.width, first->video.height};
  EncoderSettings encoder = p.encoder;
  OutputGeometry geometry;
  FM_RETURN_IF_ERROR(PlanOutputGeometry(p.media.video, job.settings.deinterlace,
                                        p.geometry_filters, out, &encoder, &geometry,
                                        &report.warnings));
  files->dir.Reset(::open(parts_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!files->dir.valid()) {
    return Status(StatusCode::kIo, "open " + parts_dir + ": " + std::strerror(errno));
  }
  spdlog::info("stitch: {} segments, {}x{}", segments->paths.size(), out.width, out.height);
  JobOutput output(OutputRequest(config, job, p, *files, UINT32_MAX, geometry, encoder,
                                 files->dir.get(), files->path()),
                   std::nullopt);
  FM_RETURN_IF_ERROR(output.Finish(*segments, job.output, &report));
  report.stages.mux_s = static_cast<double>(MonotonicUs() - t_mux) / 1e6;
  report.segments_resumed = static_cast<int64_t>(segments->paths.size());
  FillPlanFigures(job, p, &report);
  report.out_width = out.width;
  report.out_height = out.height;
  report.worker_input_format = FrameFormatName(FrameFormat::kRgb24);  // as the parts' workers
  report.output_pix_fmt = encoder.pix_fmt;
  report.seconds = static_cast<double>(MonotonicMs() - t0) / 1000.0;
  return report;
}

}  // namespace

Result<JobReport> StitchJob(const JobSpec& job, const Config& config, const std::atomic<bool>& stop,
                            const std::string& parts_dir, const UserRights* submitter) {
  JobFiles files;
  files.user = submitter;
  Result<JobReport> result = Stitch(job, config, parts_dir, &files);
  if (!result.ok() && stop.load() && result.status().code() != StatusCode::kCancelled) {
    return Status(StatusCode::kCancelled,
                  "stopped by signal (meanwhile: " + result.status().ToString() + ")");
  }
  return result;
}

}  // namespace framemill
