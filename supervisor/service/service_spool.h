// The spool (spool.h) as the service shares it between its loop and its jobs' threads: one lock
// over the spool's files, its requests, and the jobs that could not be filed. Choosing the next
// job, reading requests and counting the queue are the loop's; counting a job's starts and filing
// it are its thread's. A job's end (the service's `on_end`, which rewrites the metrics, and the
// config's on_job_end hook, posted to JobEndHooks' thread) always runs after the lock is let go:
// the metrics count the spool.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/mutex.h"
#include "common/status.h"
#include "supervisor/service/job_end_hook.h"
#include "supervisor/spool/spool.h"
#include "supervisor/spool/spool_requests.h"

namespace framemill {

// result.json of a job that failed now: FailedResultJson (job_result.h) and its finished_at.
nlohmann::json FailureResult(const std::string& id, const std::string& code,
                             const std::string& message);
nlohmann::json FailureResult(const std::string& id, const Status& s);

// A full spool is tried again this long after a write to it failed with no space.
inline constexpr uint64_t kSpoolFullRetryMs = 5000;

class ServiceSpool {
 public:
  // `on_end` runs at each job's end, before the on_job_end hook (the metrics' rewrite).
  ServiceSpool(const Config& config, std::function<void()> on_end);
  ServiceSpool(const ServiceSpool&) = delete;
  ServiceSpool& operator=(const ServiceSpool&) = delete;

  // Creates the spool's layout and takes its lock (spool.h).
  Status Open();
  // Names only (no lock needed): the spool's folders.
  const std::string& root() const { return names().root(); }
  std::string Dir(const std::string& folder) const { return names().Dir(folder); }
  std::string Dir(SpoolState state) const { return names().Dir(state); }
  std::string JobDir(SpoolState state, const std::string& id) const {
    return names().JobDir(state, id);
  }

  // ---- the loop ----
  SpoolCounts Count();
  // Acts on the requests (spool_requests.h); `running`: the jobs the service runs now.
  void PollRequests(const std::set<std::string>& running);
  // Claims the next job: an active one neither running nor unfiled (a resume or a retry), else
  // the first waiting one that can be claimed; entries of incoming/ that are no job file are set
  // aside as failed on the way. "" when there is none. Errors of the spool's own files are
  // logged, never thrown.
  std::string ClaimNext(const std::set<std::string>& running);
  // The jobs waiting, the head `head` included: those in incoming/ and those in active/ to
  // resume (neither running nor unfiled).
  int CountWaiting(const std::string& head, const std::set<std::string>& running);
  // Removes the kept work of failed jobs older than config failed_work_keep_days.
  void RemoveOldFailedWork();

  // ---- a job's thread ----
  Result<int> RaiseStarts(const std::string& id);  // Spool::RaiseStarts
  void LowerStarts(const std::string& id);         // an orderly stop is no crash
  // Files `id` under done/ or failed/ and ends it. A job that cannot be filed stays in active/
  // with its result kept here, not taken again by this process: ClaimNext tries to file it
  // again (a full spool that gets space back files it then).
  void File(const std::string& id, bool ok, const nlohmann::json& result);

  // ---- a full spool ----
  // Notes that a write to the spool failed with `s`: kNoSpace pauses claiming and filing for
  // kSpoolFullRetryMs (then ClaimNext tries again); anything else is ignored. Logged once per
  // full spell.
  void NoteWriteFailed(const Status& s);
  bool full() const { return full_.load(); }  // from a kNoSpace until a write to it works

 private:
  // ClaimNext's steps.
  std::string NextJob(const std::set<std::string>& running, std::vector<std::string>* set_aside)
      REQUIRES(mu_);
  void SetAside(const SpoolEntry& e, const Status& why, std::vector<std::string>* set_aside)
      REQUIRES(mu_);
  // Ends `id`, just filed under `state`: on_end, then the on_job_end hook posted.
  void Ended(const std::string& id, SpoolState state) EXCLUDES(mu_);
  // The spool for its folders' names alone, without the lock: a name is fixed when the spool is
  // made, and none of Spool's name functions touches a file.
  const Spool& names() const NO_THREAD_SAFETY_ANALYSIS { return spool_; }

  const Config& config_;
  const std::function<void()> on_end_;
  // Guards spool_'s files, requests_, unfiled_ and stuck_. Not recursive: nothing called with it
  // held takes it again (Ended, which rewrites the metrics that count the spool, runs after).
  Mutex mu_;
  Spool spool_ GUARDED_BY(mu_);
  IncomingCache seen_ GUARDED_BY(mu_);  // the waiting files read once (spool.h)
  // The claims so far, and each submitter's latest (queue_order.h: users take turns).
  uint64_t claims_ GUARDED_BY(mu_) = 0;
  std::map<uint32_t, uint64_t> last_claim_ GUARDED_BY(mu_);
  RequestHandler requests_ GUARDED_BY(mu_);
  // Files the jobs of unfiled_ that can be now; returns them with their state.
  std::vector<std::pair<std::string, SpoolState>> FileUnfiled() REQUIRES(mu_);
  void NoteWriteFailedLocked(const Status& s) REQUIRES(mu_);
  void NoteWriteWorkedLocked() REQUIRES(mu_);  // a write to the spool worked
  bool PausedLocked() const REQUIRES(mu_);     // a full spool, not to be tried yet

  // Jobs left in active/ because they could not be filed, with the result each ended with.
  struct Unfiled {
    bool ok = false;
    nlohmann::json result;
  };
  std::map<std::string, Unfiled> unfiled_ GUARDED_BY(mu_);
  std::atomic<bool> full_{false};
  uint64_t full_retry_ms_ GUARDED_BY(mu_) = 0;  // a full spool is tried again from then (monotonic)
  // incoming/ entries that could not be claimed nor moved aside (name, inode): logged once,
  // then skipped until they change.
  std::set<std::pair<std::string, uint64_t>> stuck_ GUARDED_BY(mu_);
  // The on_job_end hooks, off the loop and the jobs' threads. Last: the first to go, its
  // thread joined before the rest.
  JobEndHooks hooks_;
};

}  // namespace framemill
