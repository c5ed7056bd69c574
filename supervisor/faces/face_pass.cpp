#include "supervisor/faces/face_pass.h"

#include <algorithm>
#include <thread>

#include "supervisor/faces/detector_process.h"
#include "supervisor/faces/face_align.h"
#include "supervisor/media/decode_seek.h"
#include "supervisor/media/ffmpeg_pipes.h"

namespace framemill {
namespace {

constexpr int kFramesPerThread = 4;                 // per batch
constexpr size_t kMaxBatchBytes = size_t{1} << 30;  // the decoded frames of one batch, at most

}  // namespace

FaceTable TableFromTracks(const FaceTracks& tracks, const FaceSetting& face, int width, int height,
                          int64_t video_frames, int64_t first) {
  FaceTable table;
  table.width = width;
  table.height = height;
  table.face_size = face.size;
  table.face_margin = face.margin;
  table.video_frames = video_frames;
  table.first_frame = first;
  table.frames.reserve(tracks.frames.size());
  for (const std::vector<TrackedFace>& frame : tracks.frames) {
    std::vector<FaceWarp> warps;
    for (const TrackedFace& tf : frame) {
      std::optional<FaceWarp> w = AlignFace(tf.face, face.size, face.margin, tf.track);
      if (!w) continue;
      warps.push_back(*w);
      table.stats.faces_filled += tf.filled;
    }
    table.frames.push_back(std::move(warps));
  }
  table.stats.tracks = tracks.tracks;
  table.CountFaces();
  return table;
}

Result<FaceTable> RunFacePass(const FacePassInput& input, const FacePassOptions& options,
                              const std::atomic<bool>& stop) {
  const VideoStreamInfo& v = input.media->video;
  const int64_t end = input.end > 0 ? input.end : v.frame_count;
  if (input.first < 0 || end > v.frame_count || input.first >= end) {
    return Status(StatusCode::kInternal, "face pass: frames " + std::to_string(input.first) + ".." +
                                             std::to_string(end) + " of a video of " +
                                             std::to_string(v.frame_count));
  }
  const int width = v.display_width, height = v.display_height;
  const size_t frame_bytes = static_cast<size_t>(width) * height * 3;
  // The batch's frames stay under kMaxBatchBytes: fewer threads for very large frames.
  const int fit = static_cast<int>(std::max<size_t>(1, kMaxBatchBytes / frame_bytes));
  const int threads = std::min(
      {fit, kMaxDetectorThreads,
       std::max(1, options.threads > 0 ? options.threads
                                       : static_cast<int>(std::thread::hardware_concurrency()))});
  const size_t batch =
      static_cast<size_t>(std::max(threads, std::min(threads * kFramesPerThread, fit)));
  DetectorSetup setup;
  setup.detector = options.face.detector;
  setup.detection = options.detection;
  setup.threads = threads;
  setup.sandbox = options.sandbox;
  setup.log_path = options.detector_log;
  setup.binary = options.detector_binary;
  Result<std::unique_ptr<DetectorProcess>> detector = DetectorProcess::Start(setup, stop);
  if (!detector.ok()) return detector.status();

  // Without a seek (frame 0, or a video without timestamps) ffmpeg starts at frame 0 and the
  // frames before `first` are read and dropped here; either way it stops by itself at `end`.
  DecodeSeek seek = SeekFor(v, input.media->start_time, input.first, end - input.first);
  int64_t next = seek.seeks() ? input.first : 0;
  seek.max_frames = end - next;
  Result<std::unique_ptr<FrameReader>> reader =
      FrameReader::Start(input.ffmpeg, *input.source, v, input.stderr_path, FrameFormat::kRgb24,
                         input.filters, /*accurate_color=*/false, seek);
  if (!reader.ok()) return reader.status();
  std::vector<uint8_t> buffer(batch * frame_bytes);
  std::vector<std::vector<Face>> detections;
  detections.reserve(static_cast<size_t>(end - input.first));
  double detection_ms = 0;

  while (next < end) {
    if (stop.load()) return Status(StatusCode::kCancelled, "face pass: stopped");
    size_t n = 0;
    while (n < batch && next < end) {
      Result<bool> got = (*reader)->Read(buffer.data() + n * frame_bytes);
      if (!got.ok()) return got.status();
      if (!*got) {
        Status finished = (*reader)->Finish();
        return Status(StatusCode::kInputInvalid,
                      input.source->name + ": decoding ended at frame " + std::to_string(next) +
                          ", before frame " + std::to_string(end) +
                          (finished.ok() ? "" : ": " + finished.message()));
      }
      if (next++ >= input.first) ++n;  // frames before `first` (no seek) are dropped
    }
    Result<std::vector<DetectedPicture>> found =
        (*detector)->Detect(buffer.data(), static_cast<uint32_t>(n), static_cast<uint32_t>(width),
                            static_cast<uint32_t>(height), stop);
    if (!found.ok()) return found.status();
    for (DetectedPicture& d : *found) {
      detection_ms += d.ms;
      detections.push_back(std::move(d.faces));
    }
    if (options.beat) options.beat();
  }
  FM_RETURN_IF_ERROR((*reader)->Finish());

  FaceTrackOptions tracking = options.tracking;
  tracking.min_size = options.face.min_size;
  tracking.max_faces = options.face.max_faces;
  FaceTable table = TableFromTracks(TrackFaces(detections, tracking), options.face, width, height,
                                    v.frame_count, input.first);
  table.stats.detection_s = detection_ms / 1000.0;
  table.stats.detection_ms_per_frame =
      detections.empty() ? 0 : detection_ms / static_cast<double>(detections.size());
  table.stats.threads = threads;
  return table;
}

}  // namespace framemill
