// Which model a job with `model_optimization: compile` runs: its TorchScript file, or a compiled
// engine for the job's frame size, batch, precision and GPU from the engine cache
// (engine_cache.h), taken at once when one is there and passes its checks. The choice is made
// once, as the job is prepared; a resumed job chooses again (its kept segments stand either way:
// the two give the same frames within the precision's tolerance).
//
// An engine applies to whole frames on an NVIDIA GPU at fp16 or fp32 from a TorchScript model:
// not in face mode, not with tiles, not on the CPU, not for a model that is a package already.
// Where it does not apply, or none is cached, the job runs TorchScript (frozen, as `auto` does on
// CUDA) and the choice's note says why in one line, with the command that builds the engine
// ahead of time where one could be built.
#pragma once

#include <string>

#include "common/checked_file.h"
#include "common/config.h"
#include "supervisor/engines/engine_cache.h"
#include "supervisor/engines/engine_key.h"

namespace framemill {

struct EngineChoice {
  UniqueFd package;  // valid: the job runs this engine instead of its model file
  EngineKey key;     // set where an engine applies (package found or not)
  int scale = 1;     // the engine's card's
  std::string note;  // one line for the job's log
};

// `model_fd`: the job's model file (checked, open); `width` x `height`: the frame as the model
// sees it; `model_label`: its name in the note. Reads the cache in `cache_dir`
// (EngineCacheDir()). Never fails: a problem is the note, and the job runs TorchScript.
EngineChoice ChooseEngine(const JobSettings& settings, int model_fd, const std::string& model_label,
                          int width, int height, const std::string& cache_dir);

}  // namespace framemill
