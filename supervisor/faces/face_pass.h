// The face pass: frames [first, end) of a video, decoded by ffmpeg as the model sees them, run
// through BlazeFace in framemill-face-detector (detector_process.h: a confined child with several
// threads), tracked and smoothed (face_track.h) and aligned (face_align.h) into a FaceTable
// (face_table.h): per frame the FaceWarps that face mode sends the workers, and the figures of the
// pass.
//
// Frames are read in batches of 4 per thread: the pass reads a batch from ffmpeg, then the child
// detects it, each of its threads taking every n-th frame; the batch's buffer (4 x threads frames
// of rgb24, at most 1 GiB: fewer frames, then fewer threads, for very large frames) is the pass's
// memory. Detection is on the full frame, which BlazeFace letterboxes to its own 128 or 256 pixels
// (a downscale in ffmpeg before the pipe would save bytes on very large frames; not done: the
// warps are in the full frame's pixels, as the workers see it).
//
// Thread safety: RunFacePass may run on any thread. Cancellable: `stop` is read before each batch
// and while the child works.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/face_detection.h"
#include "common/face_setting.h"
#include "common/status.h"
#include "supervisor/faces/face_table.h"
#include "supervisor/faces/face_track.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

struct FacePassOptions {
  FaceSetting face;  // face_size, face_margin, face_min_size, max_faces; detector: the ONNX file
  int threads = 0;   // detection threads; 0 = the machine's cores
  FaceDetectorOptions detection;
  WorkerSandbox sandbox = WorkerSandbox::kAuto;  // the detector's confinement (worker_sandbox)
  std::string detector_log;     // the detector's stderr ("" = a temporary file)
  std::string detector_binary;  // "" = framemill-face-detector beside this program
  FaceTrackOptions tracking;  // min_size and max_faces are taken from `face`
  std::function<void()> beat;  // called after each batch, on the pass's thread (the job lives)
};

struct FacePassInput {
  std::string ffmpeg = "ffmpeg";
  const SourceFile* source = nullptr;  // the open video (not owned)
  const MediaInfo* media = nullptr;    // its probe (frame count, timestamps, upright size)
  // ffmpeg's -vf filters that turn frames upright as the model sees them (GeometryFilters of
  // source_geometry.h, colour filters if wanted); frames come out display_width x display_height.
  std::vector<std::string> filters;
  int64_t first = 0;        // the first frame (0-based, sequential decode order)
  int64_t end = 0;          // one past the last; 0 = the video's end
  std::string stderr_path;  // ffmpeg's log
};

// Errors: the detector's (DetectorProcess: no file, not BlazeFace: OpenCV's words, a crash or hang
// of the child; kInternal in a build without OpenCV's dnn module), the decoder's (kInputInvalid,
// kDecoderCrashed), kInputInvalid when the video ends before `end`, kCancelled when `stop` is set.
Result<FaceTable> RunFacePass(const FacePassInput& input, const FacePassOptions& options,
                              const std::atomic<bool>& stop);

// The table of `tracks` (faces aligned for options.face, frames from `first`), its counts filled;
// the detection figures are the caller's. A face whose keypoints coincide is left out.
FaceTable TableFromTracks(const FaceTracks& tracks, const FaceSetting& face, int width, int height,
                          int64_t video_frames, int64_t first);

}  // namespace framemill
