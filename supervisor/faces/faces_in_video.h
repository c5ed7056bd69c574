// `framemill faces`: the faces BlazeFace finds in K frames sampled across a video, as text or
// JSON, and optionally each sampled frame drawn with its boxes and keypoints (PNG), so that a
// person can see what the detector sees. Each frame is taken on its own by seeking (ffmpeg's
// input `-ss`, one short ffmpeg per frame, upright as ffmpeg shows it), never by decoding the
// whole video. Thread-safe (no shared state); the ffmpeg children are reaped.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/status.h"
#include "common/face.h"
#include "common/face_detection.h"

namespace framemill {

inline constexpr int kDefaultFaceFrames = 5;
inline constexpr int kMaxFaceFrames = 100;

struct FacesInVideoOptions {
  std::string detector;  // the BlazeFace ONNX file (required)
  int frames = kDefaultFaceFrames;  // frames sampled: the middles of K equal stretches
  std::string draw_dir;  // "" = draw nothing; else one PNG per sampled frame, written there
  FaceDetectorOptions detection;
};

struct SampledFaces {
  double time = 0;  // seconds from the file's start (as ffmpeg's input -ss counts)
  int width = 0;    // the frame as decoded (upright), pixels
  int height = 0;
  std::vector<Face> faces;  // best first
  double detect_ms = 0;     // detection alone (preprocessing, model, decoding), monotonic clock
  std::string drawing;      // the PNG written for this frame, "" when none
};

struct FacesReport {
  std::string video;
  std::string detector;
  int input_size = 0;  // the detector's square input (128 or 256)
  std::string detector_sandbox;  // how the detector's process was confined (its summary)
  std::vector<SampledFaces> frames;

  nlohmann::json ToJson() const;
  std::string ToText() const;
};

// Runs the detector on `options.frames` frames of `video`. Errors: kInputMissing / kInputInvalid
// (the video: ffprobe's or ffmpeg's words), the detector's Load errors (the file named, OpenCV's
// words), kOutputInvalid (draw_dir cannot be made or written), kCancelled when `stop` is set,
// kInternal in a build without OpenCV (detection and drawing need it).
Result<FacesReport> FindFacesInVideo(const Config& config, const std::string& video,
                                     const FacesInVideoOptions& options,
                                     const std::atomic<bool>& stop);

// The packed RGB24 picture of a binary PPM (P6, maxval 255): width, height and the pixels.
// Errors (kInputInvalid): anything else, or fewer bytes than the header promises.
struct RgbPicture {
  int width = 0;
  int height = 0;
  std::string pixels;  // width * height * 3 bytes, rows packed
};
Result<RgbPicture> ParsePpm(const std::string& bytes);

}  // namespace framemill
