// Whether a job's model can take the job's input, from what its card says (common/model_card.h),
// before any frame is decoded: the frame size against the card's bounds and multiple, and a
// package's fixed device and precision against the job's. A model without a card is not checked
// here (the worker's probe still is).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/config.h"
#include "common/model_card.h"
#include "common/status.h"

namespace framemill {

// `card`: the model's card (LoadModelCard of `model_path`, the model file as opened), nullopt
// when it has none. `width` x `height`: the frames the model will see (upright). kModelInvalid
// saying what does not fit.
Status CheckModelFitsJob(const std::optional<ModelCard>& card, const std::string& model_path,
                         const JobSettings& settings, int64_t width, int64_t height);

// The input the workers probe the model with at load, to learn its output size (the worker's
// --probe-size and --probe-batch): a kProbeSize square, face_size in face mode, and for a package
// made for one shape that shape (the only one it takes).
struct ProbeShape {
  uint32_t width = 0, height = 0, batch = 1;
};
// The model file (open, `model_fd`) is the one its card describes: kModelInvalid naming both
// digests when the card's sha256 is not the file's. A card without one is not checked. Each file
// (device, inode, size, modification time) is hashed once per process.
Status CheckModelDigest(const ModelCard& card, int model_fd, const std::string& model_path);

ProbeShape ProbeShapeFor(const std::optional<ModelCard>& card, const JobSettings& settings);

}  // namespace framemill
