// The output's size and geometry, decided once the workers' probe says what the model makes of
// its input: pure functions of the source, the settings and the probe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/job/model_fit.h"
#include "supervisor/media/media_probe.h"
#include "supervisor/media/output_geometry.h"

namespace framemill {

struct OutputSize {
  int width = 0, height = 0;
};

// The output frame's size: the model's scale, from its output (`probe_w` x `probe_h`) for the
// probe's input, applied to the upright frame (display_width x display_height), which must scale
// exactly. In face mode the faces are pasted back into the frame: the output is the frame's
// size, and the model must map its square to the same square or a whole multiple of it.
// kModelInvalid otherwise.
Result<OutputSize> OutputSizeFor(const VideoStreamInfo& v, JobMode mode, const ProbeShape& probe_in,
                                 uint32_t probe_w, uint32_t probe_h);

// The geometry the encoder writes (source_geometry.h, output_geometry.h): the output's sample
// aspect ratio (the source's display aspect kept), field order, and a pixel format that can hold
// its size (`encoder->pix_fmt` changed to it, a warning when it is not the one asked for).
// `filters` are the decoder's geometry filters, for the log.
Status PlanOutputGeometry(const VideoStreamInfo& v, Deinterlace deinterlace,
                          const std::vector<std::string>& filters, OutputSize size,
                          EncoderSettings* encoder, OutputGeometry* geometry,
                          std::vector<std::string>* warnings);

}  // namespace framemill
