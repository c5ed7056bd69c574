// The TF.js importer: a TensorFlow.js layers model (a Keras functional graph in "model.json"
// plus its weight shards, as tensorflowjs_converter writes it) becomes a TorchScript module
// (imported_network.h). Takes the layer types the published super-resolution models use
// (InputLayer, Conv2D, Activation, Add, Concatenate, UpSampling2D, depth-to-space, ...); any
// other layer or a shard whose size does not match the manifest is a clear error naming it.
#pragma once

#include <string>

#include "common/status.h"
#include "worker/model_import/imported_network.h"

namespace framemill {

// `model_json_path`: the model.json; its weight shards are read from the same directory. The
// returned module keeps framemill's model contract (RGB [0,1] in and out).
Result<ImportedNetwork> ImportTfjsLayersNetwork(const std::string& model_json_path);

}  // namespace framemill
