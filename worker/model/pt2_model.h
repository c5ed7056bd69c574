// .pt2 packages (torch.export + AOTInductor, made by scripts/export-pt2.py) as a FrameModel,
// through LibTorch's AOTIModelPackageLoader (LibTorch 2.6 and later). Built only where the
// LibTorch found at configure time has the loader (FRAMEMILL_HAVE_AOTI); elsewhere loading a
// package is an error that says so.
//
// A package holds native code compiled for one device type, GPU architecture and dtype: it runs
// on the device and in the precision it was exported for, and nowhere else (the job's device and
// precision must match; a mismatch is an error before any frame).
//
// The loader reads the package from a file and unpacks the shared object inside it into a
// temporary directory before loading it: the package's bytes (read from the descriptor the worker
// was given) are written to a private file under $TMPDIR (default /tmp; in the sandbox's private
// root, a tmpfs of its own, so a package must fit in it), which is removed once loaded.
//
// A package's code indexes its input with the strides of the example it was traced with and
// checks none at run time (unless compiled with AOTI_RUNTIME_CHECK_INPUTS): a tensor in another
// memory layout gives wrong pixels, not an error. So Run() hands the package its input in the
// layout its metadata names ("framemill_input_memory_format", written by export-pt2.py:
// "channels_last" for a package of one shape, "contiguous" otherwise), else contiguous (NCHW), as
// packages traced elsewhere are. A package of one shape names it too ("framemill_input_shape",
// "4x3x1080x1920"): it reads past an input of another shape, so Run() refuses those.
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "common/status.h"
#include "worker/model/frame_model.h"

namespace framemill {

// Whether this build can load .pt2 packages.
bool Pt2Supported();

// Loads the package whose whole content is `bytes` onto `device`; Run() takes batches of
// `dtype`. `label` names it in messages.
Result<std::unique_ptr<FrameModel>> LoadPt2Model(const std::string& bytes, const std::string& label,
                                                 const torch::Device& device,
                                                 torch::ScalarType dtype);

}  // namespace framemill
