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

// The value range a network was trained on. model.json does not say; the catalog
// (catalog.h) knows it from the package's own pre- and post-processing (UpscalerJS's RDN models:
// 0-255).
enum class TfjsValueRange { kZeroToOne, kZeroTo255 };
const char* Name(TfjsValueRange range);  // "0-1", "0-255" (the card's source_value_range)

// `model_json_path`: the model.json; its weight shards are read from the same directory. The
// returned module keeps framemill's model contract (RGB [0,1] in and out): it multiplies its
// input by the range's top, and divides and clamps its output back to [0,1]. Errors are
// kModelInvalid naming the layer or weight (kInputMissing for a missing file).
Result<ImportedNetwork> ImportTfjsLayersNetwork(
    const std::string& model_json_path, TfjsValueRange range = TfjsValueRange::kZeroTo255);

}  // namespace framemill
