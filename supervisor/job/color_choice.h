// Which YUV <-> RGB conversion a job uses (JobSettings::color_conversion) once its source and its
// first worker are known. Pure function.
#pragma once

#include <string>

#include "common/config.h"

namespace framemill {

// Never kAuto. `worker_device`: the device as the first worker reported it ("cpu", "cuda:0",
// ...); `source_pix_fmt`: the source's pixel format as ffprobe names it; `yuv_round_trip`:
// whether, handed the source's planes, the worker would also hand the encoder YUV
// (ArenaPlanner::OutputFormat: whole frames of even size, a limited-range source, a yuv420p
// encoder, not face mode), the float path both ways that keeps an identity pass at the
// encoder's own loss.
//
// kAuto, for an 8-bit 4:2:0 source (yuv420p or yuvj420p): kDevice on a GPU (half the bytes
// through the pipeline, no swscale in the decoder, whichever way the output goes back); on any
// other device kDevice where `yuv_round_trip`, since 8-bit RGB clamps colour edges to the RGB
// cube (1-2 dB of a plane on clean sources), else kAccurate (the float conversion in only buys
// nothing there and costs a CPU worker more time and memory than swscale). kAccurate for any
// other source.
// kDevice for any other source is kFast, and `*warning` (when not null) then gets a sentence
// saying so; otherwise it is left as it is. The others stay.
ColorConversion ChooseColorConversion(ColorConversion setting, const std::string& worker_device,
                                      const std::string& source_pix_fmt, bool yuv_round_trip,
                                      std::string* warning);

}  // namespace framemill
