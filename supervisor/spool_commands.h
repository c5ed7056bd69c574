// The spool's command-line client: submit, list, status, cancel, retry. Each returns the process
// exit code (0 ok, 1 failed, 2 usage, 3 no such job) and prints what a shell script can parse: one
// job id on submit; tab-separated lines on list.
#pragma once

#include <string>
#include <vector>

#include "common/config.h"

namespace framemill {

inline constexpr int kExitNoSuchJob = 3;

// submit INPUT --model M --output O [--priority P] [key=value ...]
int SubmitCommand(const std::vector<std::string>& args, const Config& config);
int ListCommand(const Config& config);
// status [JOB] [--follow]
int StatusCommand(const std::vector<std::string>& args, const Config& config);
// cancel JOB / retry JOB: a request the service acts on when the caller submitted the job or is
// an admin (spool_requests.h); 1 when the service refused.
int CancelCommand(const std::string& id, const Config& config);
int RetryCommand(const std::string& id, const Config& config);

}  // namespace framemill
