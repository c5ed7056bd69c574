// The spool directory that `framemill serve` drains, and that `framemill submit/list/status/
// cancel` work on:
//
//   incoming/*.json        jobs waiting; clients write elsewhere (tmp/) and rename them in
//   active/<id>/           a claimed job: job.json, work/ (state.json, segments), timeline.jsonl,
//                          progress.json, and a `cancel` marker when cancelled
//   done/<id>/             finished: job.json, result.json, timeline.jsonl
//   failed/<id>/           failed or cancelled: job.json, result.json (status, reason code and
//                          message), timeline.jsonl
//   tmp/                   where `framemill submit` writes before the rename
//   workers/               the workers' stderr logs (workers outlive jobs)
//   lock                   flock'ed by the one supervisor that serves this spool
//
// Every move is a rename within the spool's file system, so a crash leaves each job in exactly
// one place. Not thread-safe; one Spool per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace framemill {

struct SpoolEntry {
  std::string id;
  std::string state;  // incoming | active | done | failed
  std::string path;   // the job file (incoming) or the job's directory
  int priority = 0;
  int64_t submitted_ns = 0;  // the job file's mtime
};

class Spool {
 public:
  explicit Spool(std::string root) : root_(std::move(root)) {}
  ~Spool();

  // Creates the layout if needed.
  Status Prepare();
  // Takes the spool's lock; fails (kIo) naming the holder's pid when another supervisor has it.
  Status Lock();

  const std::string& root() const { return root_; }
  std::string Dir(const std::string& state) const { return root_ + "/" + state; }
  std::string JobDir(const std::string& state, const std::string& id) const {
    return Dir(state) + "/" + id;
  }

  // Jobs waiting in incoming/, in the order they should run: priority (high first), then
  // submission time. Files not ending in .json are ignored. A file whose priority cannot be
  // read sorts as priority 0 (it will fail with its reason when claimed).
  std::vector<SpoolEntry> Incoming() const;
  // Claimed jobs (after a crash or a stop), oldest claim first.
  std::vector<SpoolEntry> Active() const;
  // Every job in every state.
  std::vector<SpoolEntry> All() const;
  // Finds a job by id in any state.
  Result<SpoolEntry> Find(const std::string& id) const;

  // Moves incoming/<name>.json to active/<id>/job.json and returns the id (the file's name
  // without .json, made safe and unique).
  Result<std::string> Claim(const SpoolEntry& incoming);

  // Writes result.json into active/<id> and moves the directory to done/ or failed/.
  Status Finish(const std::string& id, bool ok, const nlohmann::json& result);

  // Moves a waiting job straight to failed/<id>/ with `result`.
  Status FailIncoming(const SpoolEntry& incoming, const nlohmann::json& result);

  // Writes a job file into incoming/ the safe way (tmp/, fsync, rename). Returns its id.
  Result<std::string> Submit(const nlohmann::json& job);

 private:
  std::string UniqueId(const std::string& wanted) const;

  std::string root_;
  int lock_fd_ = -1;
};

}  // namespace framemill
