// A job: one input video through one model into one output video. The job file format is
// documented key by key in config/README.md; defaults for every optional key come from the
// config's "defaults". A JobSpec that parsed is complete: nothing is read from the file later.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/status.h"

namespace framemill {

// What becomes of a source's alpha channel (the job's `alpha`). The model never sees it (frames
// travel as RGB); kept, it travels beside the model and is joined again at encode
// (supervisor/media/alpha_join.h).
enum class AlphaMode {
  kAuto,  // kept where the encoder and its pixel format hold alpha, else dropped with a warning
  kKeep,  // kept; an encoder that cannot hold it refuses the job before any frame is decoded
  kDrop,  // dropped with a warning: the output is opaque
};
const char* Name(AlphaMode mode);  // "auto", "keep", "drop"
std::optional<AlphaMode> ParseAlphaMode(const std::string& name);

// What becomes of an input cut short: a file whose header announces more video frames than it
// holds (the job's `truncated_input`).
enum class TruncatedInput {
  kRefuse,  // the job fails with input_invalid, naming the frames announced and present
  kAccept,  // the frames that are there and decode are rendered; result.json says what was lost
};
const char* Name(TruncatedInput mode);  // "refuse", "accept"
std::optional<TruncatedInput> ParseTruncatedInput(const std::string& name);

struct JobSpec {
  std::string input;       // source video file
  std::string output;      // final video file; appears only when complete and verified
  std::string model;       // TorchScript file
  bool overwrite = false;  // replace an existing output
  int priority = 0;        // the spool runs higher first, then older first
  AlphaMode alpha = AlphaMode::kAuto;
  TruncatedInput truncated_input = TruncatedInput::kRefuse;
  JobSettings settings;    // config defaults overridden by the job's keys
};

// Validates `object` completely: required keys, types, ranges, unknown keys. Errors are
// kInvalidJob and name the key ("job.encoder.crf: ...").
Result<JobSpec> ParseJob(const nlohmann::json& object, const JobSettings& defaults);

// Reads and parses a job file (at most kMaxJobFileBytes).
Result<JobSpec> LoadJobFile(const std::string& path, const JobSettings& defaults);

}  // namespace framemill
