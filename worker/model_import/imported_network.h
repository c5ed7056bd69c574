// What an importer (worker/model_import/) makes of a published network: a TorchScript module
// built in C++ (torch::jit::Module::define, no Python) that keeps framemill's model contract
// (worker/model/frame_model.h: float [N,3,H,W] RGB in [0,1] in, [N,3,H*scale,W*scale] in [0,1] out;
// the original network's channel order and value range are folded into forward()), and the
// facts about it that go into the model's card (common/model_card.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/script.h>

namespace framemill {

struct ImportedNetwork {
  torch::jit::Module module;
  std::string architecture;            // e.g. "SRVGGNetCompact (ncnn, 16 convolutions)"
  int scale = 1;
  int receptive_field = 0;             // pixels each side an output pixel depends on
  int64_t min_size = 1;
  std::optional<int64_t> max_size;
  int size_multiple = 1;
  std::string source_channel_order = "rgb";
  std::string source_value_range = "0-1";

  ImportedNetwork() : module("framemill_imported") {}
};

}  // namespace framemill
