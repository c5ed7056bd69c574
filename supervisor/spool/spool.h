// The spool directory that `framemill serve` drains, and that `framemill submit/list/status/
// cancel/retry` work on. Several local users share it; the service runs as its own user.
//
//   incoming/*.json   1777  jobs waiting; clients write in tmp/ and rename them here. Sticky:
//                           a user cannot move or delete another's job. World-readable, so that
//                           `framemill list` shows every waiting job.
//   tmp/              1733  where clients write before the rename (sticky; names not listable)
//   requests/         1733  cancel and retry requests (spool_requests.h), read and removed by
//                           the service, which acts on them as their owner may
//   active/<id>/      0755  a claimed job: job.json, owner.json (the submitter), starts (the
//                           attempt count), work/ (state.json, segments), timeline.jsonl,
//                           progress.json, and a `cancel` marker when cancelled
//   done/<id>/        0755  finished: job.json, owner.json, result.json, timeline.jsonl
//   failed/<id>/      0755  failed or cancelled: the same, result.json with the reason code and
//                           message; work/ kept for `framemill retry` when the reason is
//                           retryable (see the service), else removed. An entry of incoming/
//                           that is no job file (a FIFO, a directory, a symlink, unreadable) is
//                           moved here as job.json, unread, with the reason.
//   workers/          0750  the workers' stderr logs (workers outlive jobs)
//   metrics/          0755  the service's metrics file (config metrics_textfile, by default);
//                           made by the service when it writes there, not by Prepare()
//   lock                    flock'ed by the one supervisor that serves this spool
//
// Prepare() creates missing folders with these modes and sets them on folders the service owns
// (systemd/framemill.tmpfiles.conf creates the same). Every move is a rename within the spool's
// file system, so a crash leaves each job in exactly one place. Not thread-safe; one Spool per
// thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/status.h"

namespace framemill {

// Where a job stands: the spool folder that holds it. Read from the folder a job was found in
// (never from text); Name() is the folder's name, and the word `list`, `status` and the
// on_job_end hook print.
enum class SpoolState { kIncoming, kActive, kDone, kFailed };
inline constexpr SpoolState kSpoolStates[] = {SpoolState::kIncoming, SpoolState::kActive,
                                              SpoolState::kDone, SpoolState::kFailed};
const char* Name(SpoolState state);  // "incoming", "active", "done", "failed"
// Done or failed: the job will not run again unless retried.
inline bool Ended(SpoolState state) {
  return state == SpoolState::kDone || state == SpoolState::kFailed;
}

struct SpoolEntry {
  std::string id;
  SpoolState state = SpoolState::kIncoming;
  std::string path;   // the job file (incoming) or the job's directory
  int priority = 0;          // as the job file asks (incoming only)
  // When the entry came into its folder: its ctime, which the kernel sets at the rename and no
  // user can date back (a job file's mtime is its submitter's to set).
  int64_t submitted_ns = 0;
  uint64_t inode = 0;  // the entry's own inode (lstat), to recognise it again
  uint32_t uid = 0;    // the entry's owner (incoming: who submitted it)
};

// What Incoming() read of each waiting job file, so that a file is parsed once while it waits:
// it is read again only when its inode, ctime or size changes (any rewrite changes its ctime).
// One per reader (the service keeps one); not thread-safe.
struct IncomingCache {
  struct Seen {
    uint64_t inode = 0;
    int64_t changed_ns = 0;
    int64_t size = 0;
    int priority = 0;
  };
  std::map<std::string, Seen> seen;  // by file name in incoming/
};

// How many jobs each state holds, read cheaply (names and one lstat per waiting job, no job
// file opened): for metrics.
struct SpoolCounts {
  int64_t incoming = 0, active = 0, done = 0, failed = 0;
  int64_t oldest_incoming_ns = 0;  // when the oldest waiting job file came (its ctime); 0 if none
};

// A job file taken from incoming/ by Claim().
struct ClaimedJob {
  std::string id;
  uint32_t uid = 0;  // the job file's owner and group: who submitted it
  uint32_t gid = 0;
};

class Spool {
 public:
  explicit Spool(std::string root) : root_(std::move(root)) {}
  ~Spool();

  // Creates the layout if needed, with the modes above.
  Status Prepare();
  // Takes the spool's lock; fails (kIo) naming the holder's pid when another supervisor has it.
  Status Lock();
  // The pid of the supervisor that holds the spool's lock (serves it now), read from
  // /proc/locks without touching the lock; 0 when none does (no service is running on this
  // spool: its active jobs wait for the next start); -1 when this cannot be known (no
  // /proc/locks). Any user may ask.
  int ServingPid() const;

  const std::string& root() const { return root_; }
  // A folder of the spool by name ("tmp", "requests", "workers"), or a state's.
  std::string Dir(const std::string& folder) const { return root_ + "/" + folder; }
  std::string Dir(SpoolState state) const { return Dir(std::string(Name(state))); }
  // The folder of job `id` in `state` (not incoming: a waiting job is a file there).
  std::string JobDir(SpoolState state, const std::string& id) const {
    return Dir(state) + "/" + id;
  }

  // Jobs waiting in incoming/, by the priority each asks (high first), then the time it came
  // (the service's own order, with its rules, is queue_order.h). Files not ending in .json are
  // ignored. A file whose priority cannot be read sorts as priority 0 (it will fail with its
  // reason when claimed). With `cache`, only new or changed files are read.
  std::vector<SpoolEntry> Incoming(IncomingCache* cache = nullptr) const;
  // Claimed jobs (after a crash or a stop), oldest claim first.
  std::vector<SpoolEntry> Active() const;
  // Every job in every state.
  std::vector<SpoolEntry> All() const;
  SpoolCounts Count() const;
  // Finds a job by id in any state.
  Result<SpoolEntry> Find(const std::string& id) const;
  // What a person typed: the job of that id, else the one job whose id begins with it (as git
  // takes a commit's prefix). Errors: kInvalidJob for none, or for several (named).
  Result<SpoolEntry> Resolve(const std::string& id) const;

  // Takes incoming/<name>.json: opens it once (O_NOFOLLOW | O_NONBLOCK) and checks with fstat
  // that it is a regular file of at most kMaxJobFileBytes, then moves it to active/<id>/job.json
  // (the id is the file's name without .json, made safe and unique) and records its owner in
  // owner.json. An entry that vanished first gives an empty id (nothing to do). Errors:
  // kInvalidJob when the entry is no job file (the caller sets it aside with SetAside()), kIo
  // when the spool itself fails.
  Result<ClaimedJob> Claim(const SpoolEntry& incoming);

  // Moves an entry of incoming/ to failed/<id>/job.json as it is, unread and unfollowed (a
  // FIFO, a directory or a link stays what it is), with `result`. Returns the id.
  Result<std::string> SetAside(const SpoolEntry& incoming, const nlohmann::json& result);

  // Writes result.json into active/<id> and moves the directory to done/ or failed/.
  Status Finish(const std::string& id, bool ok, const nlohmann::json& result);
  // The submitter of the job in `job_dir`: the owner of its job.json (as Claim took it), who
  // may read the files the service writes there whatever its umask; kNoReader when unknown.
  static uint32_t SubmitterOf(const std::string& job_dir);

  // Raises active/<id>/starts by one (written and fsynced before it returns) and returns the
  // new count; LowerStarts undoes it for a start that ended in an orderly stop.
  Result<int> RaiseStarts(const std::string& id);
  void LowerStarts(const std::string& id);

  // Moves failed/<id> back to active/<id> (its work/ kept, result.json and starts removed), to
  // be resumed.
  Status Requeue(const std::string& id);

  // Removes work/ of failed jobs whose result is older than `max_age_s`; returns how many.
  int RemoveOldFailedWork(double max_age_s);

  // Writes a job file into incoming/ the way a client must: created exclusively in tmp/ (never
  // following a link), fsynced, renamed into incoming/. Needs only tmp/ and incoming/, as a
  // fresh install has them. Readable by the submitter and the service alone: mode 0600, and an
  // access ACL for incoming/'s owner (the service's user) when that is another user (0644 where
  // the file system has no ACLs). Returns its id.
  Result<std::string> Submit(const nlohmann::json& job);

  // Writes a request file into requests/ the same way (spool_requests.h). Returns its path.
  Result<std::string> PutRequest(const nlohmann::json& request);

 private:
  std::string UniqueId(const std::string& wanted) const;
  // Writes `content` as tmp/<random>.json (O_EXCL | O_NOFOLLOW) and renames it to
  // `dir`/<same name>, never replacing an entry there. Mode 0644, or with `reader` 0600 and
  // readable by that uid too (Submit).
  Result<std::string> PutFile(const std::string& dir, const std::string& content,
                              std::optional<uint32_t> reader = std::nullopt);

  std::string root_;
  int lock_fd_ = -1;
};

}  // namespace framemill
