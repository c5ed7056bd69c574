#include "supervisor/faces/job_faces.h"

namespace framemill {

Result<FaceTable> FacesForJob(const Config& config, const JobSettings& settings,
                              const JobFacesInput& input, const std::atomic<bool>& stop) {
  const VideoStreamInfo& v = input.media->video;
  const int64_t end = input.end > 0 ? input.end : v.frame_count;
  const FaceSetting& face = settings.faces;
  if (!face.table.empty()) {
    Result<FaceTable> table = ReadFaceTable(face.table);
    if (!table.ok()) return table.status().WithContext("job.face_table");
    const FaceTableNeed need{v.display_width, v.display_height, face.size,
                             v.frame_count,   input.first,      end - input.first};
    FM_RETURN_IF_ERROR(CheckFaceTable(*table, need, "job.face_table " + face.table));
    // Only the job's frames.
    const auto from = table->frames.begin() + (input.first - table->first_frame);
    table->frames = std::vector<std::vector<FaceWarp>>(from, from + (end - input.first));
    table->first_frame = input.first;
    // The job's max_faces holds for a table too (its faces are largest first): the arena has
    // room for that many a frame, and the figures count what is pasted.
    for (std::vector<FaceWarp>& faces : table->frames) {
      if (faces.size() > static_cast<size_t>(face.max_faces)) faces.resize(face.max_faces);
    }
    table->CountFaces();
    table->stats.detection_s = 0;  // detected elsewhere
    return table;
  }
  FacePassInput pass;
  pass.ffmpeg = config.ffmpeg;
  pass.source = input.source;
  pass.media = input.media;
  pass.filters = input.filters;
  pass.first = input.first;
  pass.end = end;
  pass.stderr_path = input.stderr_path;
  FacePassOptions options;
  options.face = face;
  options.threads = input.threads;
  options.sandbox = config.worker_sandbox.value_or(WorkerSandbox::kAuto);
  options.detector_log = input.detector_log;
  options.detector_binary = config.face_detector_binary;
  options.beat = input.beat;
  return RunFacePass(pass, options, stop);
}

}  // namespace framemill
