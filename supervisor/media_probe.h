// What the supervisor needs to know about an input before planning: which stream is the video
// (found by type, never by index: in some files audio is stream 0), its size and rate, the
// presentation time of every frame, and which other streams to carry over. Uses ffprobe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

struct Rational {
  int64_t num = 0;
  int64_t den = 1;
  double value() const { return den == 0 ? 0.0 : static_cast<double>(num) / den; }
  std::string ToString() const { return std::to_string(num) + "/" + std::to_string(den); }
};

struct VideoStreamInfo {
  int index = -1;  // absolute stream index in the file
  std::string codec;
  int width = 0;
  int height = 0;
  Rational frame_rate;        // nominal rate (r_frame_rate, else avg_frame_rate)
  double start_time = 0.0;    // seconds; first presentation time of the stream
  int64_t frame_count = 0;    // frames a sequential decode yields
  int64_t header_frames = 0;  // frames the container's header announces (0 = not given)
  double last_time = 0.0;     // seconds; presentation time of the last frame
  // Presentation time of each frame, seconds, ascending: kept for variable-rate video only (its
  // frames keep these times); empty at a constant rate, so that memory does not grow with the
  // video's length.
  std::vector<double> frame_times;
  bool constant_rate = true;  // every frame within a quarter frame of start + i / frame_rate
  std::string pix_fmt;        // ffprobe name ("yuv420p"), "" when unknown
  std::string color_space;    // ffprobe names ("bt709", "smpte170m"), "" when unknown
  std::string color_range;    // "tv" | "pc" | ""
  std::string color_primaries;
  std::string color_transfer;
};

struct OtherStreamInfo {
  int index = -1;
  std::string type;  // "audio" | "subtitle"
  std::string codec;
  double duration = 0.0;  // seconds, 0 when unknown
};

struct MediaInfo {
  std::string format_name;
  double start_time = 0.0;  // of the container: earliest start of any stream
  double duration = 0.0;    // of the container, seconds
  VideoStreamInfo video;
  std::vector<OtherStreamInfo> audio;
  std::vector<OtherStreamInfo> subtitles;
};

// Probes `path`. With `frame_times`, reads every video packet's timestamp (no decoding; fast).
// Errors: kInputMissing (no such file), kInputInvalid (not a media file, no video stream,
// no frames) with ffprobe's own message.
Result<MediaInfo> ProbeMedia(const std::string& ffprobe, const std::string& path, bool frame_times);

// Parses "30000/1001" (also "25"); den 0 or garbage gives {0, 1}.
Rational ParseRational(const std::string& text);

}  // namespace framemill
