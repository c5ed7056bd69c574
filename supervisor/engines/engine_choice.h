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

#include <cstdint>
#include <string>

#include "common/checked_file.h"
#include "common/config.h"
#include "supervisor/engines/engine_cache.h"
#include "supervisor/engines/engine_key.h"

namespace framemill {

// Under model_optimization auto a job builds an engine beside it, where none is cached, only
// when it has at least this many frames: on an H100 the restoration net's engine was built in
// 110 s beside its 1080p job, which then ran 95.5 fps where TorchScript ran 78.7 (BENCHMARKS.md),
// so a job of 20,000 frames moving at about 120 s ends about 28 s (11%) sooner; a job of 9,000
// or fewer ends before the build does. A short job never starts a compiler on a shared machine;
// `compile` always builds.
inline constexpr int64_t kAutoEngineMinFrames = 20000;

struct EngineChoice {
  UniqueFd package;  // valid: the job runs this engine instead of its model file
  EngineKey key;     // set where an engine applies (package found or not)
  int scale = 1;     // the engine's card's
  std::string note;  // one line for the job's log
  // None is cached for the key, and one can be built (`framemill model compile ...`, the
  // command in `build_command`, or beside the job: supervisor/job/engine_beside.h).
  bool buildable = false;
  std::string build_command;
};

// `model_fd`: the job's model file (checked, open); `width` x `height`: the frame as the model
// sees it; `model_label`: its name in the note. Reads the cache in `cache_dir`
// (EngineCacheDir()). Never fails: a problem is the note, and the job runs TorchScript. The note
// begins "model_optimization <the job's setting>: ".
EngineChoice ChooseEngine(const JobSettings& settings, int model_fd, const std::string& model_label,
                          int width, int height, const std::string& cache_dir);

}  // namespace framemill
