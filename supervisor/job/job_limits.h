// The config's limits on one job's size (Config::max_frame_pixels, max_job_frames), checked
// against the probed input before any worker starts or frame is decoded: a small hostile file
// can claim a 16000x16000 frame or millions of frames, which would cost the service gigabytes of
// arena, worker memory and plan.
#pragma once

#include "common/config.h"
#include "common/status.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

// kInputInvalid naming the limit and the config key when `video` is over one; else Ok.
Status CheckJobLimits(const VideoStreamInfo& video, const Config& config);

}  // namespace framemill
