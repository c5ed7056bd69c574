#include "supervisor/faces/video_face_table.h"

#include <cstdio>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/file_util.h"
#include "supervisor/media/source_geometry.h"
#include "supervisor/media/source_intake.h"

namespace framemill {

Result<FaceTable> MakeVideoFaceTable(const Config& config, const std::string& video,
                                     const FacePassOptions& options,
                                     const std::atomic<bool>& stop) {
  // The video named on the command line by the person running it, not a job's: no roots.
  SourceRules rules = JobSourceRules(config, nullptr);
  rules.roots = InputRoots::Anywhere();
  Result<TakenSource> taken = TakeSource(video, rules, /*frame_times=*/true);
  if (!taken.ok()) return taken.status();
  const SourceFile& source = taken->source;
  const MediaInfo* media = &taken->media;
  Result<std::vector<std::string>> filters =
      GeometryFilters(media->video, config.defaults.deinterlace);
  if (!filters.ok()) return filters.status().WithContext(video);

  std::string dir = TemporaryDirectory() + "/framemill-faces-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    return Status(StatusCode::kIo, "cannot make a temporary directory for ffmpeg's log");
  }
  FacePassInput input;
  input.ffmpeg = config.ffmpeg;
  input.source = &source;
  input.media = media;
  input.filters = std::move(*filters);
  input.stderr_path = dir + "/decoder.log";
  FacePassOptions pass = options;
  pass.sandbox = config.worker_sandbox.value_or(WorkerSandbox::kAuto);
  pass.detector_log = dir + "/detector.log";
  pass.detector_binary = config.face_detector_binary;
  Result<FaceTable> table = RunFacePass(input, pass, stop);
  (void)RemoveTree(dir);
  return table;
}

std::string DescribeFaceTable(const FaceTable& t) {
  char line[256];
  std::snprintf(line, sizeof line,
                "%zu frames (%dx%d), %lld faces in %d tracks (%lld filled), %lld frames without "
                "faces; detection %.1f ms a frame on %d threads",
                t.frames.size(), t.width, t.height, static_cast<long long>(t.stats.faces_found),
                t.stats.tracks, static_cast<long long>(t.stats.faces_filled),
                static_cast<long long>(t.stats.frames_without_faces),
                t.stats.detection_ms_per_frame, t.stats.threads);
  return line;
}

}  // namespace framemill
