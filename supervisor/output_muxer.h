// The last stage of a job: join the encoded segments by stream copy, add the source's audio and
// subtitle streams by stream copy, check the result, and only then move it to the output path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "supervisor/media_probe.h"

namespace framemill {

struct MuxRequest {
  std::string ffmpeg;
  std::string ffprobe;
  std::string mkvmerge = "mkvmerge";  // for variable-frame-rate sources only
  std::string source;                 // the job's input (audio and subtitles come from it)
  const MediaInfo* source_info = nullptr;
  std::vector<std::string> segments;    // encoded segment files, in order
  std::vector<int64_t> segment_frames;  // frames in each segment
  Rational frame_rate;                  // the rate the segments were encoded at
  std::string scratch_dir;              // for the concat list and ffmpeg's log
  std::string output;                   // final path; written only when verified
  int expected_width = 0;
  int expected_height = 0;
};

// On success the output exists at request.output, fsynced. On failure nothing is left at the
// output path or beside it.
Status MuxAndVerify(const MuxRequest& request);

// The temporary name the output is written under before it is verified: same directory (so the
// final rename is atomic), hidden, and with the output's extension (ffmpeg picks the container
// from it).
std::string PartialOutputPath(const std::string& output);

}  // namespace framemill
