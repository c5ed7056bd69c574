// A source's alpha channel carried around the model. The model takes RGB and never sees alpha;
// where a job keeps it (its `alpha` key, common/job_file.h AlphaMode), each segment's encoder opens
// the source a second time (the same open file and input restrictions as the decoder), seeks it
// as the decoder is seeked for the segment's first frame (decode_seek.h), scales it to the
// output size with the frame, and takes its alpha plane into the model's picture (mergeplanes).
// Both inputs are renumbered 0, 1, 2... in one time base, so frame i of the picture meets frame i
// of the alpha whatever the source's timestamps. Nothing is stored: the alpha is decoded again,
// segment by segment, as the picture's frames arrive (a second decode of the source).
//
// Only encoders whose bitstream holds the alpha plane (prores_ks 4444, ffv1: a planar YUV format
// with alpha, yuva*) are used: VP8/VP9 alpha travels beside the picture as Matroska block
// additions, which the NUT segment files do not carry. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/media/decode_seek.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

// What the job does with the source's alpha (DecideAlpha).
struct AlphaDecision {
  bool keep = false;
  std::string pix_fmt;  // with keep: the encoder's pixel format with alpha (yuva...)
  std::string warning;  // a dropped alpha, named; empty when kept or when the source has none
};

// The source's alpha under `mode`, for `codec` writing `pix_fmt` (resolved, never "auto"),
// which takes `supported` (pixel_format.h EncoderPixelFormats). A source without alpha: nothing.
// kKeep with an encoder or format that cannot hold alpha: kInvalidJob naming why. kAuto: kept
// where it can be, else dropped with a warning saying why; kDrop: dropped with a warning.
Result<AlphaDecision> DecideAlpha(AlphaMode mode, const VideoStreamInfo& video,
                                  const std::string& codec, const std::string& pix_fmt,
                                  const std::vector<std::string>& supported);

// The source as the encoders read its alpha: not owned; lives as long as the job.
struct AlphaSource {
  const SourceFile* source = nullptr;
  const VideoStreamInfo* video = nullptr;
  double container_start_s = 0;      // the container's start (media_probe.h MediaInfo)
  std::vector<std::string> filters;  // the decoder's geometry filters (turn upright, deinterlace)
};

// The output frame and how it is written.
struct AlphaTarget {
  int width = 0, height = 0;  // the output size: the alpha is scaled to it
  Rational frame_rate;        // the picture's input rate: both inputs are renumbered in 1/rate
  Rational sample_aspect{1, 1};
  std::string pix_fmt;  // the encoder's, with alpha (AlphaDecision::pix_fmt)
};

// Rewrites the segment encoder's arguments `encoder_args` (ffmpeg_pipes.h EncoderArguments: the
// picture on "-i pipe:0" shaped by one "-vf") so that the encoder also reads the alpha of the
// segment's frames first_frame .. first_frame + frames - 1 from `alpha` and merges it in.
std::vector<std::string> JoinAlphaArguments(const std::vector<std::string>& encoder_args,
                                            const AlphaSource& alpha, const AlphaTarget& target,
                                            int64_t first_frame, int64_t frames);

}  // namespace framemill
