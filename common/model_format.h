// Which kind of model file a worker was given, told by its content, never by its name: a
// TorchScript file and a .pt2 package (torch.export + AOTInductor) are both zip archives; a
// package has an "archive_format" entry that says "pt2", a TorchScript file a "data.pkl" beside
// its "code/" folder. No LibTorch here: the supervisor and tools can ask too.
#pragma once

#include <string>

#include "common/status.h"

namespace framemill {

enum class ModelFormat { kTorchScript, kPt2 };
const char* Name(ModelFormat format);  // "torchscript", "pt2"

// The format of the model file whose whole content is `bytes`; kModelInvalid saying what the
// bytes are instead ("not a zip archive", "a zip archive that is neither ...").
Result<ModelFormat> DetectModelFormat(const std::string& bytes);

}  // namespace framemill
