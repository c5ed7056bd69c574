// The spool's command-line client: submit, list, status, cancel, retry. Each returns the process
// exit code (supervisor/report/job_result.h: kExitOk, kExitFailed, kExitUsage, kExitNoSuchJob)
// and prints what a shell script can parse: one job id on submit; tab-separated lines on list;
// with `json`, one JSON document on stdout whose field names are stable (README.md,
// "Scripting"). A spool that does not exist or cannot be read is an error (kExitFailed) that
// names the folder and what to do, never an empty listing.
#pragma once

#include <string>
#include <vector>

#include "common/config.h"

namespace framemill {

struct SubmitArgs {
  std::string input, model, output;
  std::string priority;               // "" = the config's default
  std::vector<std::string> settings;  // key=value job keys (value: JSON when it parses)
};

// Submits a job; prints its id (json: {"id", "state": "incoming", "job"}).
int SubmitCommand(const SubmitArgs& args, const Config& config, bool json);
// A header, then one line per job: id, state, detail (json: an array of EntryJson objects);
// `state` ("incoming", "active", "done", "failed", "cancelled"; "" = all) keeps only the jobs in
// it. A cancelled job (filed under failed/ with reason `cancelled`) is listed as cancelled.
int ListCommand(const Config& config, bool json, const std::string& state = "");
// No id: the spool's counts and its active jobs; an id (or the start of one, when only one job's
// begins so): that job's progress or result. `follow` repeats until the job ends (not with json).
int StatusCommand(const std::string& id, bool follow, bool json, const Config& config);
// cancel JOB / retry JOB (an id, or its unique start): a request the service acts on when the caller submitted the job or is
// an admin (spool_requests.h); 1 when the service refused.
int CancelCommand(const std::string& id, const Config& config);
int RetryCommand(const std::string& id, const Config& config);

}  // namespace framemill
