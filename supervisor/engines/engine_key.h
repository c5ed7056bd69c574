// What a compiled engine is built for, and so what it is cached under (engine_cache.h): a
// TorchScript model compiled ahead of time by AOTInductor into a .pt2 package
// (scripts/export-pt2.py) holds kernels made for one frame size, one batch, one precision, one GPU
// architecture, one torch and one C++ compiler. Any of those changed is another engine.
//
// The key's fields:
//   model      the sha256 of the TorchScript file's bytes
//   shape      the frame as the model sees it (upright), WxH; batch; precision (fp16 | fp32)
//   gpu        the GPU's name as its driver gives it (/proc/driver/nvidia/gpus/*/information,
//              "NVIDIA H100 80GB HBM3"): one name is one architecture and compute capability
//   torch      the LibTorch version the worker is built against (a package loads only into the
//              torch that made it), which the builder's Python torch must match
//   compiler   the first line of `c++ --version` (Inductor compiles the package's C++ with it)
// and the recipe, how export-pt2.py is asked to build (kEngineRecipe). Its text (Text) lists
// them one a line; its id (Id) is the first 32 hex digits of the text's
// sha256, the cache entry's folder name. The supervisor reads every field without CUDA.
#pragma once

#include <string>

#include "common/config.h"
#include "common/status.h"

namespace framemill {

// The build's recipe, in every key: raised when engine_build asks export-pt2.py for another kind
// of package, so that no job takes an engine of the old kind. 2: with Inductor's max-autotune
// (recipe 1's engine of an imported x2 upscaler ran 133 fps, as torch.compile's default mode did;
// torch.compile's max-autotune 166; H100, 2026-12-08).
constexpr int kEngineRecipe = 2;

struct EngineKey {
  std::string model_sha256;
  int width = 0, height = 0, batch = 0;
  Precision precision = Precision::kFp16;
  std::string gpu;
  std::string torch;
  std::string compiler;

  std::string Text() const;
  std::string Id() const;
  // "1920x1080 batch 4 fp16 on NVIDIA H100 80GB HBM3": for messages.
  std::string Describe() const;
};

// The name of NVIDIA GPU `index` (in PCI bus order, which is CUDA's order on a machine of one
// kind of GPU) from `driver_root`/gpus/*/information; kIo naming the folder when there
// is no such GPU (no NVIDIA driver, fewer GPUs).
Result<std::string> NvidiaGpuName(int index,
                                  const std::string& driver_root = "/proc/driver/nvidia");

// The LibTorch version framemill-worker was built against ("2.11.0"; Debian's "1.13.1").
std::string WorkerTorchVersion();

// The first line of `c++ --version` (asked once a day: supervisor/process/program_answers.h), or
// "none" when there is no c++ on PATH.
std::string CompilerVersion();

// The key for `model_sha256` at the given shape, batch and precision on GPU `gpu_index`:
// the GPU's name, the worker's torch and the compiler filled in. kIo when the GPU is not
// there.
Result<EngineKey> EngineKeyFor(const std::string& model_sha256, int width, int height, int batch,
                               Precision precision, int gpu_index);

}  // namespace framemill
