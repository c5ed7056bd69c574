#include "supervisor/job/job_limits.h"

#include <string>

namespace framemill {

Status CheckJobLimits(const VideoStreamInfo& video, const Config& config) {
  const int64_t pixels = int64_t{video.width} * int64_t{video.height};
  if (pixels > config.max_frame_pixels) {
    return Status(StatusCode::kInputInvalid,
                  "frames of " + std::to_string(video.width) + "x" + std::to_string(video.height) +
                      " (" + std::to_string(pixels) + " pixels) are over the config's " +
                      "max_frame_pixels, " + std::to_string(config.max_frame_pixels) +
                      ": refused before any frame is decoded");
  }
  if (video.frame_count > config.max_job_frames) {
    return Status(StatusCode::kInputInvalid,
                  std::to_string(video.frame_count) + " frames are over the config's " +
                      "max_job_frames, " + std::to_string(config.max_job_frames) +
                      ": refused before any frame is decoded");
  }
  return Status::Ok();
}

}  // namespace framemill
