// Whether a job's model can take the job's input, from what its card says (common/model_card.h),
// before any frame is decoded: the frame size against the card's bounds and multiple, and a
// package's fixed device and precision against the job's. A model without a card is not checked
// here (the worker's probe still is).
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/status.h"

namespace framemill {

// `model_path`: the model file as opened (its card is "<model_path>.json"). `width` x `height`:
// the frames the model will see (upright). kModelInvalid saying what does not fit; kModelInvalid
// too for a card that cannot be read (a card that lies is worse than none).
Status CheckModelFitsJob(const std::string& model_path, const JobSettings& settings,
                         int64_t width, int64_t height);

}  // namespace framemill
