// Before/after stills for the job report: a few frames spread over the job, copied out of the
// arena when their chunk's output is ready (no second decode of anything), then turned into
// 8-bit RGB, scaled down to at most kStillWidth pixels wide with OpenCV and encoded as JPEG
// data: URIs with libjpeg (jpeg_encode.h). Both are optional at build time
// (FRAMEMILL_HAVE_OPENCV is set where both were found): without them nothing is captured and
// Encode says so in a sentence for the report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/shm_protocol.h"
#include "supervisor/report/report_html.h"

namespace framemill {

inline constexpr int kStillCount = 4;     // frames shown, spread over the job
inline constexpr int kStillWidth = 480;   // px, at most
inline constexpr int kStillQuality = 85;  // JPEG quality

// Whether this build can make stills (it was built with OpenCV and libjpeg).
bool StillsAvailable();

// A frame of the arena as packed 8-bit RGB, every `step`-th pixel of every `step`-th row
// (ceil(w/step) x ceil(h/step) pixels, 3 bytes each). `format` and the size are the supervisor's
// own copy of the geometry; yuv420p uses `matrix` and `full_range` as the workers do. Pure; any
// size >= 1x1.
std::vector<uint8_t> FrameToRgb24(const uint8_t* frame, FrameFormat format, uint32_t width,
                                  uint32_t height, YuvMatrix matrix, bool full_range,
                                  uint32_t step = 1);

// Packed RGB24 as a data:image/jpeg;base64 URI, scaled to at most kStillWidth wide. "" when this
// build cannot make stills or encoding failed.
std::string RgbToDataUri(const std::vector<uint8_t>& rgb, int width, int height);

// For a model that changes the frame size (an upscaler): the stills are kCropSide x kCropSide
// (at most) crops of the output at its own resolution, shown 1:1, beside the same region of the
// source scaled to the output's size with bicubic interpolation (what the model is judged
// against): an upscale scaled back down to a still of the source's size looks like its input.
inline constexpr int kCropSide = 400;  // px: two fit side by side on the page

// A region of a frame, in its pixels.
struct StillCrop {
  int x = 0, y = 0, width = 0, height = 0;
};
// The middle kCropSide x kCropSide (at most) of a `width` x `height` frame.
StillCrop CenterCrop(int width, int height);

// `crop` of packed RGB24 `rgb` (`width` pixels a row). `crop` lies inside the picture.
std::vector<uint8_t> CropRgb(const std::vector<uint8_t>& rgb, int width, const StillCrop& crop);

// `crop` (in output pixels) of packed RGB24 `rgb` (`in_width` x `in_height`) scaled to
// `out_width` x `out_height` with bicubic interpolation (OpenCV's INTER_CUBIC). Empty without
// OpenCV or on an OpenCV error.
std::vector<uint8_t> ScaledCrop(const std::vector<uint8_t>& rgb, int in_width, int in_height,
                                int out_width, int out_height, const StillCrop& crop);

// Collects the stills of one job. Thread-safe: encoder threads call Capture concurrently.
class StillCapture {
 public:
  // `chunk_first_frames`: each chunk's first frame in the source, by chunk index; `arena`: the
  // supervisor's own copy of the arena geometry.
  StillCapture(std::vector<int64_t> chunk_first_frames, const ArenaGeometry& arena);

  // Whether chunk `chunk` is one whose first frame becomes a still (false without OpenCV).
  bool Wants(int64_t chunk) const;
  // Turns the chunk's first input and output frame (`in`, `out`: the slot's frame 0) into a
  // still (a few ms: converted, scaled and encoded at once, so no whole frame is kept). Call
  // only when the chunk's output is ready and before its slot is released.
  void Capture(int64_t chunk, const uint8_t* in, const uint8_t* out);
  // The stills captured, in frame order; when there are none, *note says why.
  std::vector<ReportStill> Encode(std::string* note) const;

 private:
  // A model that changes the frame size: the still's 1:1 crops (see CenterCrop).
  void CaptureCrop(const uint8_t* in, const uint8_t* out, ReportStill* s) const;

  std::vector<int64_t> first_frames_;
  std::vector<int64_t> wanted_;  // chunk indices, ascending
  ArenaGeometry arena_;
  mutable Mutex mu_;
  std::vector<ReportStill> stills_ GUARDED_BY(mu_);
  int captured_ GUARDED_BY(mu_) = 0;
};

}  // namespace framemill
