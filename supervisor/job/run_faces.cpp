#include "supervisor/job/run_faces.h"

#include <optional>
#include <utility>

#include "common/log.h"
#include "supervisor/faces/job_faces.h"
#include "supervisor/media/source_geometry.h"

namespace framemill {

Result<FaceTable> FacesForRun(const Config& config, const JobSpec& job, const PreparedJob& prepared,
                              const RenderRange& range, int64_t resumed, const std::string& scratch,
                              const std::atomic<bool>& stop, const std::function<void()>& beat,
                              FaceFigures* figures) {
  // The job's settings, its face files as opened (job_files.h OpenFaceFiles).
  JobSettings settings = job.settings;
  settings.faces = prepared.faces;
  const VideoStreamInfo& v = prepared.media.video;
  const JobPlan& plan = prepared.plan;
  const int64_t first =
      range.first_chunk < range.end_chunk ? plan.chunks[range.first_chunk].first_frame : 0;
  const int64_t end = prepared.ChunkStartFrame(range.end_chunk);
  const std::string kept = scratch + "/faces.json";
  FaceTableNeed need;
  need.width = v.display_width;
  need.height = v.display_height;
  need.face_size = settings.faces.size;
  need.video_frames = plan.frame_count;
  need.first_frame = first;
  need.frames = end - first;
  // A resumed run: the table the first run made covers these frames (it began at or before them).
  // Only with segments kept: a job started over (its input, model or settings changed) finds
  // its faces again, as a new job would.
  std::optional<FaceTable> faces;
  Result<FaceTable> table =
      resumed > 0 ? ReadFaceTable(kept) : Result<FaceTable>(Status(StatusCode::kIo, "started over"));
  if (table.ok()) {
    FaceTableNeed whole = need;
    whole.first_frame = table->first_frame;
    whole.frames = end - table->first_frame;
    if (table->first_frame <= first && table->face_margin == settings.faces.margin &&
        CheckFaceTable(*table, whole, kept).ok()) {
      spdlog::info("faces: the table of the first run ({}), frames {} to {}", kept, first, end);
      faces = std::move(*table);
    }
  }
  if (!faces) {
    JobFacesInput in;
    in.source = &prepared.source;
    in.media = &prepared.media;
    in.filters = prepared.geometry_filters;
    in.first = first;
    in.end = end;
    in.stderr_path = scratch + "/faces-decoder.log";
    in.detector_log = scratch + "/faces-detector.log";
    in.beat = beat;
    Result<FaceTable> made = FacesForJob(config, settings, in, stop);
    if (!made.ok()) return made.status();
    FM_RETURN_IF_ERROR(WriteFaceTable(kept, *made));
    faces = std::move(*made);
  }
  *figures = FaceFiguresOf(*faces, v.frame_rate.value());
  // Only this run's frames count in its figures.
  spdlog::info("faces: {} in frames {} to {} ({} frames without a face, {} tracks)",
               figures->faces_found, first, end, figures->frames_without_faces,
               faces->stats.tracks);
  return std::move(*faces);
}

}  // namespace framemill
