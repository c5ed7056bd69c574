// Before/after stills for the job report: a few frames spread over the job, copied out of the
// arena when their chunk's output is ready (no second decode of anything), then turned into
// 8-bit RGB, scaled down to at most kStillWidth pixels wide with OpenCV and encoded as JPEG
// data: URIs with libjpeg (jpeg_encode.h). Both are optional at build time
// (FRAMEMILL_HAVE_OPENCV is set where both were found): without them nothing is captured and
// Encode says so in a sentence for the report.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

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
  std::vector<int64_t> first_frames_;
  std::vector<int64_t> wanted_;  // chunk indices, ascending
  ArenaGeometry arena_;
  mutable std::mutex mu_;
  std::vector<ReportStill> stills_;  // guarded by mu_
  int captured_ = 0;                 // guarded by mu_
};

}  // namespace framemill
