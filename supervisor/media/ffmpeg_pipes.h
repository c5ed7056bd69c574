// ffmpeg as a child process with raw frames over a pipe, in any FrameFormat (common/
// frame_format.h: rgb24, rgb48le, or the source's own yuv420p): FrameReader decodes the source's
// video stream sequentially, SegmentEncoder encodes one segment file (from the workers' rgb24 or
// rgb48le). ffmpeg's stderr goes to a log file whose last lines are quoted in errors. Not thread-safe: one thread per object.
// Destroying an object whose child still runs kills the child.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/frame_format.h"
#include "common/status.h"
#include "supervisor/media/alpha_join.h"
#include "supervisor/media/color_path.h"
#include "supervisor/media/decode_seek.h"
#include "supervisor/media/hdr_metadata.h"
#include "supervisor/media/media_probe.h"
#include "supervisor/process/subprocess.h"

namespace framemill {

class PipedChild;

class FrameReader {
 public:
  // Starts decoding `video` of `input`. `-fps_mode passthrough` keeps ffmpeg from inventing or
  // dropping frames to make the rate constant: every decoded frame comes out exactly once.
  // ffmpeg reads the open file `input.fd` (as /proc/self/fd/N) under `input.restrictions`.
  // `filters` (joined into one -vf, in order; the colour path's ColorFilters go last:
  // color_path.h) shape the frames; ffmpeg's own rotation is off (-autorotate 0): the filters
  // turn frames upright (source_geometry.h), so frames come out video.display_width x
  // video.display_height, in `format`: kRgb24 or kRgb48 (rgb48le), or kYuv420p, the source's own
  // 8-bit 4:2:0 planes (the source must be yuv420p or yuvj420p: see IsPlanarYuv420).
  // `-sws_flags` is the colour path's decoder flags (`accurate_color`), for any conversion
  // ffmpeg inserts. `seek` (decode_seek.h) starts it at a later frame by seeking, and may stop
  // it after a number of frames.
  static Result<std::unique_ptr<FrameReader>> Start(
      const std::string& ffmpeg, const SourceFile& input, const VideoStreamInfo& video,
      const std::string& stderr_path, FrameFormat format, const std::vector<std::string>& filters,
      bool accurate_color = true, const DecodeSeek& seek = DecodeSeek());
  ~FrameReader();

  // Reads one frame (FrameBytes of its format) into `dst`. true: a frame; false: end of stream.
  // A partial frame is an error.
  Result<bool> Read(uint8_t* dst);

  // Waits for ffmpeg to exit; a non-zero exit is kInputInvalid with ffmpeg's last lines, a
  // death by a signal kDecoderCrashed (Read reports that too for a frame cut short by it).
  Status Finish();

  // Fault injection for tests: sends the ffmpeg child `sig` now (SIGKILL: a crash; SIGTERM:
  // ffmpeg stops and exits with an error code, as on an error of its own). The stream ends
  // here: Read drops what ffmpeg wrote ahead into the pipe, and Finish reports the exit the
  // signal makes even when ffmpeg had already finished (a short video fits in the pipe), so a
  // test's fault comes at its frame whatever the timing.
  void KillForTest(int sig);

 private:
  Status Crashed(const CommandOutput& exit) const;
  explicit FrameReader(std::unique_ptr<PipedChild> child, size_t frame_bytes);
  std::unique_ptr<PipedChild> child_;
  size_t frame_bytes_;
  int killed_for_test_ = 0;  // KillForTest's signal
};

struct SegmentFormat {
  int width = 0;
  int height = 0;
  Rational frame_rate;
  EncoderSettings encoder;     // pix_fmt already resolved (never "auto")
  ColorPath color;             // matrix, range and tags, both ways (supervisor/media/color_path.h)
  bool accurate_color = true;  // see SwsFlags
  // Geometry (output_geometry.h): the sample aspect ratio the output carries and its field order
  // ("progressive", "tt" or "bb"). Odd sizes are handled by the pixel format (PixelFormatForSize).
  Rational sample_aspect{1, 1};
  std::string field_order = "progressive";
  FrameFormat in_format = FrameFormat::kRgb24;  // the frames it is given: rgb24, rgb48le, yuv420p
  HdrMetadata hdr;                              // written into the bitstream where the encoder can
  std::optional<AlphaSource> alpha;  // the source's alpha, joined in (alpha_join.h); none: opaque
};

class SegmentEncoder {
 public:
  // Encodes frames written to it into the open file `output_fd` (NUT container: exact
  // timestamps, any codec); ffmpeg is given the descriptor, never a name. With format.alpha, the
  // source's alpha of frames first_frame .. first_frame + frames - 1 is joined to them.
  static Result<std::unique_ptr<SegmentEncoder>> Start(const std::string& ffmpeg, int output_fd,
                                                       const SegmentFormat& format,
                                                       const std::string& stderr_path,
                                                       int64_t first_frame = 0, int64_t frames = 0);
  ~SegmentEncoder();

  Status Write(const uint8_t* frames, size_t bytes);

  // Closes ffmpeg's input and waits; a non-zero exit is kEncodeFailed (kNoSpace for a full
  // disk) with ffmpeg's last lines, a death by a signal kEncoderCrashed (Write too).
  Status Finish();

  // Fault injection for tests: kills the ffmpeg child (SIGKILL) now.
  void KillForTest();

 private:
  explicit SegmentEncoder(std::unique_ptr<PipedChild> child);
  std::unique_ptr<PipedChild> child_;
};

// The ffmpeg arguments that encode rgb24/rgb48le frames into `format` (exposed for tests and
// benchmarks). Accurate rounding (color_path.h) costs the decoder about 8 ms of one core per 1080p
// frame (ffmpeg 5.1), which caps decoding near 110 fps; without it the conversion takes about
// 2 ms and rounds slightly coarser.
std::vector<std::string> EncoderArguments(const SegmentFormat& format);

}  // namespace framemill
