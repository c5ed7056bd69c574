// The weights of a TF.js model: its "weightsManifest" (groups of weight specs, each group stored
// in one or more shard files that concatenate into one buffer) read against the shard files.
// Every size is checked before a byte is used: the manifest's weights must fill each group's
// shards exactly, so a truncated, padded or swapped shard is an error naming the group and files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "common/status.h"

namespace framemill {

struct TfjsWeight {
  std::string name;            // e.g. "F_0/kernel"
  std::vector<int64_t> shape;  // as the manifest gives it (Conv2D kernels: [kh, kw, in, out])
  torch::Tensor value;         // float32, owning its memory
};

// `manifest`: model.json's "weightsManifest"; `dir`: the directory its shard paths are relative
// to (a path with "/" or ".." in it is refused). Only float32 weights without quantization are
// taken (what the published models use); any other dtype is an error naming the weight. Errors
// are kModelInvalid (a wrong model) or kInputMissing (a shard not found).
Result<std::map<std::string, TfjsWeight>> ReadTfjsWeights(const nlohmann::json& manifest,
                                                          const std::string& dir);

}  // namespace framemill
