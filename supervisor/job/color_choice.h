// Which YUV <-> RGB conversion a job uses (JobSettings::color_conversion) once its source and its
// first worker are known. Pure function.
#pragma once

#include <string>

#include "common/config.h"

namespace framemill {

// Never kAuto. kAuto is kDevice for workers on a GPU (`worker_device` as the first worker
// reported it: "cuda:0", ...) and an 8-bit 4:2:0 source (`source_pix_fmt` yuv420p or
// yuvj420p), kAccurate otherwise. kDevice for any other source is kFast, and `*warning` (when
// not null) then gets a sentence saying so; otherwise it is left as it is. The others stay.
ColorConversion ChooseColorConversion(ColorConversion setting, const std::string& worker_device,
                                      const std::string& source_pix_fmt, std::string* warning);

}  // namespace framemill
