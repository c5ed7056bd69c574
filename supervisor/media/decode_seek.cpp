#include "supervisor/media/decode_seek.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace framemill {
namespace {

std::string Seconds(double s) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.6f", s);
  return text;
}

}  // namespace

double FrameTime(const VideoStreamInfo& v, int64_t k) {
  if (!v.frame_times.empty()) {
    k = std::clamp<int64_t>(k, 0, static_cast<int64_t>(v.frame_times.size()) - 1);
    return v.frame_times[static_cast<size_t>(k)];
  }
  const double rate = v.frame_rate.value();
  return rate > 0 ? v.start_time + static_cast<double>(k) / rate : v.start_time;
}

DecodeSeek SeekFor(const VideoStreamInfo& v, double container_start_s, int64_t first_frame,
                   int64_t frames) {
  DecodeSeek seek;
  seek.first_frame = first_frame;
  seek.max_frames = frames;
  if (first_frame <= 0 || first_frame >= v.frame_count || !v.timestamps) return seek;
  // Half way between the frame before and this one: far from both, whatever the rounding of
  // the seconds to the stream's time base (a constant-rate frame is within a quarter frame of
  // its ideal time: media_probe.h).
  const double wanted = FrameTime(v, first_frame);
  const double between = (FrameTime(v, first_frame - 1) + wanted) / 2;
  if (between <= 0) return seek;  // a few frames at the very start: counting is as cheap
  seek.trim_start_s = between;
  const double rate = v.frame_rate.value();
  const double margin = rate > 0 ? kSeekMarginFrames / rate : 1.0;
  const double at = wanted - margin - container_start_s;
  if (at > 0) seek.input_seek_s = at;
  return seek;
}

std::vector<std::string> SeekInputArguments(const DecodeSeek& seek) {
  if (!seek.seeks()) return {};
  // -copyts: frames keep the file's timestamps, the ones the trim compares with; without
  // -noaccurate_seek ffmpeg would drop by its own rule (relative to the seek point) first.
  std::vector<std::string> args = {"-copyts", "-noaccurate_seek"};
  if (seek.input_seek_s > 0) args.insert(args.end(), {"-ss", Seconds(seek.input_seek_s)});
  return args;
}

std::string SeekFilter(const DecodeSeek& seek) {
  return seek.seeks() ? "trim=start=" + Seconds(seek.trim_start_s) : "";
}

std::vector<std::string> SeekOutputArguments(const DecodeSeek& seek) {
  if (seek.max_frames <= 0) return {};
  return {"-frames:v", std::to_string(seek.max_frames)};
}

}  // namespace framemill
