// A job from the command line, as `framemill submit` and `framemill run` take it: the input, the
// model and the output as arguments, every other job key as KEY=VALUE (config/README.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace framemill {

// A value on the command line: JSON when it parses (numbers, true, objects, "quoted"), else the
// text as a string (batch=4 is 4, device=cuda:0 is "cuda:0").
nlohmann::json CliValue(const std::string& text);

// Sets each KEY=VALUE of `settings` in `job` (the value as CliValue). Errors: kInvalidJob naming
// an entry that is not KEY=VALUE.
Status ApplyJobSettings(const std::vector<std::string>& settings, nlohmann::json* job);

// {"input", "model", "output"} as absolute paths, then `settings` applied. Errors as
// ApplyJobSettings.
Result<nlohmann::json> JobFromArgs(const std::string& input, const std::string& model,
                                   const std::string& output,
                                   const std::vector<std::string>& settings);

}  // namespace framemill
