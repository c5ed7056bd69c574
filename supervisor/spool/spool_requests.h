// Cancel and retry requests: how a user who cannot write into the spool's job folders (they
// belong to the service) asks the service to act on a job.
//
// A client (`framemill cancel JOB`, `framemill retry JOB`) writes a small JSON file into the
// sticky requests/ folder ({"version": 1, "action": "cancel"|"retry", "job": ID}; Spool::
// PutRequest). The service reads each request's owner from the file it opened (O_NOFOLLOW,
// fstat; never a link), acts on it only when that owner submitted the job or is an admin
// (submitter.h: root, the service's user, the config's admin_group), removes the request, and
// logs what it did or why it refused. Anything else in requests/ is removed unread.
//
//   cancel  a waiting job is filed under failed/ as cancelled; a running one gets the `cancel`
//           marker its progress callback acts on; an active one not running is filed at once.
//   retry   a failed job whose reason is retryable (RetryableReason) goes back to active/ with
//           its kept work/, and resumes from its finished segments.
// Not thread-safe: the service calls it from its loop, under its lock.
#pragma once

#include <cstdint>
#include <vector>
#include <set>
#include <string>
#include <utility>

#include "common/config.h"
#include "supervisor/spool/spool.h"
#include "supervisor/spool/submitter.h"

namespace framemill {

enum class RequestAction { kCancel, kRetry };
const char* Name(RequestAction action);  // "cancel", "retry": the request file's "action"
// The action a request file names; kInvalidJob for any other word.
Result<RequestAction> ParseRequestAction(const std::string& text);

// Whether a failure with reason `code` may be retried (and so keeps its work/ for
// failed_work_keep_days): not when the job itself is wrong (invalid_job, input_missing,
// input_invalid, model_invalid, output_invalid, path_not_allowed, invalid_config) or was
// cancelled; yes for crashes, a full disk, failed workers or encoders, I/O errors.
bool RetryableReason(const std::string& code);

// The submitter of the job in `dir` (active/, done/ or failed/): owner.json, or else the owner
// of job.json (lstat, never followed).
Result<Submitter> JobOwner(const std::string& dir);

class RequestHandler {
 public:
  RequestHandler(Spool& spool, const Config& config) : spool_(spool), config_(config) {}

  // Reads, acts on and removes every request now in requests/. `running` are the jobs the
  // service runs now. Returns the jobs it filed itself under failed/ (a cancel of a job that was
  // not running): the caller ends them as any job's end (the on_job_end hook, the metrics),
  // outside its lock of the spool.
  std::vector<std::string> Poll(const std::set<std::string>& running);

 private:
  void Handle(const std::string& path, const std::set<std::string>& running);
  Status Cancel(const std::string& id, const Submitter& from, const std::set<std::string>& running);
  Status Retry(const std::string& id, const Submitter& from);

  Spool& spool_;
  const Config& config_;
  std::vector<std::string> filed_;  // by the Poll under way
  // Entries that could not be removed (name, inode): logged once, then skipped.
  std::set<std::pair<std::string, uint64_t>> stuck_;
};

}  // namespace framemill
