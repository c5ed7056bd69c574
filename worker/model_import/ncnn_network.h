// The ncnn importer: a network in ncnn's format (a text ".param" graph and a binary ".bin" of
// weights, as Tencent's ncnn writes them) becomes a TorchScript module (imported_network.h).
// Takes the layer types the super-resolution networks shipped in ncnn format use (Input, Split,
// Convolution, ReLU/PReLU, PixelShuffle, Interp, BinaryOp, ...); any other layer, or a .bin whose
// size does not match the graph, is a clear error naming the layer, never a wrong network.
#pragma once

#include <string>

#include "common/status.h"
#include "worker/model_import/imported_network.h"

namespace framemill {

// `param_path`, `bin_path`: the two files of one network. The returned module keeps framemill's
// model contract (RGB [0,1] in and out).
Result<ImportedNetwork> ImportNcnnNetwork(const std::string& param_path,
                                          const std::string& bin_path);

}  // namespace framemill
