// The frames `framemill preview` looks at: K times spread over the source, a short run of
// consecutive frames taken at each by seeking (ffmpeg's input `-ss`: it jumps to the keyframe
// before the time and decodes from there), never by decoding the video between them, and
// gathered into one small lossless clip that the real pipeline can run on. Thread-safe (no shared
// state); each call runs its own ffmpeg children and reaps them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

// The middles of `k` equal stretches of [0, duration) seconds (k >= 1): times relative to the
// start of the file, as ffmpeg's input `-ss` counts them.
std::vector<double> SampleTimes(double duration, int k);

// The frames of the video stream that ffmpeg (`-loglevel verbose`) says it decoded, in the final
// statistics of its log ("Input stream #0:1 (video): 28 packets read (78200 bytes); 25 frames
// decoded;"), summed over the video streams; -1 when the log has no such line.
int64_t FramesDecodedInLog(const std::string& log);

struct SampledFrames {
  std::vector<double> times;   // seconds from the file's start: where each stretch starts
  int64_t frames_decoded = 0;  // by all the seeking decoders together, as ffmpeg counted them
  double decode_s = 0;         // their time together (monotonic clock), process starts included
};

// Takes `stretch` consecutive frames from each of `times` on, from the open `source` (its video
// stream `v`, by index) with input seeking, through the job's source filters (deinterlacing for
// `mode`, then turning upright: GeometryFilters), in the source's pixel format, and writes them
// as one clip of times.size() x `stretch` frames to the open, empty file `clip_fd`: FFV1
// (lossless) in NUT at the source's nominal rate, carrying the upright sample aspect ratio and
// the source's colour tags (HDR side data is not carried). Short continuous stretches give the
// model its batches and the encoder motion to predict, as in the job. The frames pass through a
// raw file created in the private directory `scratch_dir_fd`. ffmpeg gets every file as
// /proc/self/fd/N. Errors: kInputInvalid (a stretch cut short by the end of the video, ffmpeg's
// message otherwise), kInvalidJob (GeometryFilters), kIo.
Result<SampledFrames> ExtractSampledFrames(const std::string& ffmpeg, const SourceFile& source,
                                           const VideoStreamInfo& v, Deinterlace mode,
                                           const std::vector<double>& times, int stretch,
                                           int scratch_dir_fd, int clip_fd);

}  // namespace framemill
