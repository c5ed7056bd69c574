// What framemill knows about a model file, kept beside it as "<model file>.json" (for example
// models/esrgan-slim-x2.pt and models/esrgan-slim-x2.pt.json). Written by `framemill model
// import` (and the .pt2 export script); read by `framemill model info` and by the supervisor,
// which fails a job whose input the model cannot take before any frame is decoded. A model with
// no card is run as before: nothing is known, nothing is checked.
//
// Every model framemill runs keeps one contract (worker/model/frame_model.h): input float [N,3,H,W]
// RGB in [0,1], output [N,3,H*scale,W*scale] in [0,1]. The card records how the original network
// differed (its channel order and value range), which the importer folded into the model file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/user_rights.h"

namespace framemill {

struct ModelCard {
  std::string name;            // importable name or export name, e.g. "esrgan-slim-x2"
  std::string format;          // "torchscript" or "pt2"
  std::string architecture;    // e.g. "RDN (TF.js layers model, 24 layers)"
  int scale = 1;               // output size = scale x input size
  int channels = 3;            // input channels the network takes
  std::string source_channel_order = "rgb";   // the original network's ("rgb" or "bgr")
  std::string source_value_range = "0-1";     // the original network's ("0-1", "0-255")
  int receptive_field = 0;     // pixels each side an output pixel depends on (tile overlap)
  int64_t min_size = 1;        // smallest input width/height the network takes
  std::optional<int64_t> max_size;  // largest input width/height, when bounded
  int size_multiple = 1;       // input width/height must be a multiple of this
  std::optional<int> max_batch;       // largest batch, when bounded (a .pt2 package)
  // A package compiled for one shape (scripts/export-pt2.py --shape/--batch: Inductor then
  // specialises its kernels to it) takes frames of exactly fixed_width x fixed_height and batches
  // of exactly fixed_batch. The worker probes the model at that shape and pads a chunk's short
  // last batch up to it; tiles and face mode (other shapes) are refused.
  std::optional<int64_t> fixed_width, fixed_height;  // both or neither; then fixed_batch too
  std::optional<int> fixed_batch;
  std::optional<std::string> device;  // "cuda" or "cpu" when the file runs there only (.pt2)
  std::optional<std::string> precision;  // "fp32", "fp16", "bf16" when fixed (.pt2)
  std::string licence;         // SPDX id of the weights' licence, e.g. "MIT", "BSD-3-Clause"
  std::string source;          // where the weights came from: "npm:@upscalerjs/esrgan-slim@1.0.0
                               // models/x2/model.json"
  std::string sha256;          // of the model file the card describes
};

// "<model_path>.json".
std::string ModelCardPath(const std::string& model_path);

nlohmann::json ModelCardToJson(const ModelCard& card);
// Validates every key (kInvalidArgument naming the key).
Result<ModelCard> ModelCardFromJson(const nlohmann::json& j);

// The card beside `model_path`: nullopt when there is none; an error when it is unreadable or
// invalid (a card that lies is worse than none). Opened once and checked as the model is
// (common/checked_file.h OpenCheckedFile): a regular file (a FIFO does not block) whose real
// path lies inside `roots` (empty: anywhere), and with a `reader`, that user could read
// (common/user_rights.h; kPathNotAllowed).
Result<std::optional<ModelCard>> LoadModelCard(const std::string& model_path,
                                               const std::vector<std::string>& roots = {},
                                               const UserRights* reader = nullptr);

// Writes the card beside `model_path` atomically (temp + fsync + rename).
Status SaveModelCard(const std::string& model_path, const ModelCard& card);

// Whether the card fixes the frame size or the batch (a package for one shape).
bool HasFixedShape(const ModelCard& card);

// Why a width x height input does not fit the card ("the model takes frames of at least 16
// pixels a side; this input is 8x8"), or ok.
Status CheckInputFits(const ModelCard& card, int64_t width, int64_t height);

}  // namespace framemill
