// `framemill model compile` and `framemill model engines`: the compiled-engine cache by hand
// (supervisor/engines/). compile builds the engine a job with `model_optimization: compile` at
// that frame size, batch, precision and GPU then takes at once; engines lists the cache, and
// with --clear empties it. Each returns the process exit code (supervisor/report/job_result.h).
#pragma once

#include <string>

#include "common/config.h"

namespace framemill {

struct CompileArgs {
  std::string model;  // a TorchScript file
  std::string shape;  // WxH: the frame as the model sees it (upright)
  int batch = 8;      // the job's batch
  std::string precision = "fp16";
  std::string device = "cuda";  // cuda or cuda:N: the GPU whose kind it is built for (and on)
};

// Builds the engine (or says it is there already): prints its id and folder.
int ModelCompileCommand(const CompileArgs& args, const Config& config);
// One line per engine: id, what it is for, size, when built; `clear` removes them all.
int ModelEnginesCommand(bool clear, const Config& config);

}  // namespace framemill
