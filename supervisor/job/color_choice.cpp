#include "supervisor/job/color_choice.h"

#include "common/frame_format.h"

namespace framemill {

ColorConversion ChooseColorConversion(ColorConversion setting, const std::string& worker_device,
                                      const std::string& source_pix_fmt, bool yuv_round_trip,
                                      std::string* warning) {
  const bool planar420 = IsPlanarYuv420(source_pix_fmt);
  if (setting == ColorConversion::kAuto) {
    const bool gpu = worker_device.rfind("cuda", 0) == 0;
    return planar420 && (gpu || yuv_round_trip) ? ColorConversion::kDevice
                                                : ColorConversion::kAccurate;
  }
  if (setting == ColorConversion::kDevice && !planar420) {
    if (warning != nullptr) {
      *warning = std::string("color_conversion device takes 8-bit 4:2:0 video and this is ") +
                 (source_pix_fmt.empty() ? "of an unknown pixel format" : source_pix_fmt) +
                 "; ffmpeg converts it to RGB (fast) instead";
    }
    return ColorConversion::kFast;
  }
  return setting;
}

}  // namespace framemill
