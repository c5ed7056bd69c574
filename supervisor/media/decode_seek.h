// Where a decoder starts when a job does not begin at frame 0 (a part of a job, a resumed job,
// a restarted decoder): ffmpeg seeks the input to a keyframe before the first wanted frame
// (`-ss` before `-i`: the demuxer's index, no decoding) and a `trim` filter drops, by
// presentation timestamp, every frame before it. Frames are told apart by their source
// timestamps (the probe's, media_probe.h), never by counting after a seek, so a variable frame
// rate, B-frame reordering and open GOPs change nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "supervisor/media/media_probe.h"

namespace framemill {

// The seek lands this many nominal frame durations before the first wanted frame: an index
// that holds decode times lists a keyframe by a time up to the reorder delay earlier than it is
// shown, and the leading frames of an open GOP (shown before their keyframe) must come from the
// GOP before. Eight covers B-frame delays of x264, x265 and libvpx's alt-ref frames.
inline constexpr int kSeekMarginFrames = 8;

// What a decoder is asked for, in ffmpeg's terms.
struct DecodeSeek {
  int64_t first_frame = 0;  // the first frame delivered (index in the video's sequential decode)
  // `-ss` before `-i`, seconds after the container's start (ffmpeg adds the start): < 0 = none.
  double input_seek_s = -1;
  // The trim filter's start, seconds on the source's own timeline (ffmpeg runs with -copyts):
  // frames shown before it are dropped. < 0 = none.
  double trim_start_s = -1;
  // `-frames:v`: ffmpeg stops by itself after this many frames (0 = to the end of the input).
  int64_t max_frames = 0;
  bool seeks() const { return trim_start_s >= 0; }
};

// Presentation time of frame `k` (0-based, sequential decode order), seconds: the probe's time
// for a variable-rate video, else start + k / rate.
double FrameTime(const VideoStreamInfo& v, int64_t k);

// The seek that delivers frames first_frame .. first_frame + frames - 1 (frames 0: to the end)
// of `v` in the file whose container starts at `container_start_s`. First frame 0, or a video
// whose packets carry no timestamps (v.timestamps false: nothing to seek by), gives no seek:
// the caller then drops frames by counting them, as a sequential decode delivers them.
DecodeSeek SeekFor(const VideoStreamInfo& v, double container_start_s, int64_t first_frame,
                   int64_t frames);

// The ffmpeg input options of `seek` ("-copyts", "-ss", ...), placed before "-i", and the filter
// that goes last in the -vf chain ("" = none); the output options ("-frames:v N") go to
// `output`.
std::vector<std::string> SeekInputArguments(const DecodeSeek& seek);
std::string SeekFilter(const DecodeSeek& seek);
std::vector<std::string> SeekOutputArguments(const DecodeSeek& seek);

}  // namespace framemill
