// A job's done-log: state.json in its workspace, beside the finished segment files and
// plan.json (the chunk and segment plan, written once when the job starts). state.json names
// the plan it belongs to (input, model, frame count, chunk and segment sizes) and lists the
// finished segments with their sizes, always a run of segments from the first: a later run of
// the same job with the same workspace keeps those segments as they are and redoes the rest.
// Written atomically (temp file, fsync, rename, fsync of the directory) after every segment.
//
// Thread-safe: encoder threads report finished segments concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/job_file.h"
#include "common/mutex.h"
#include "common/status.h"
#include "supervisor/plan/job_plan.h"

namespace framemill {

class JobState {
 public:
  // `job` and `plan` must outlive this object. The log covers segments [first_segment,
  // end_segment) of the plan (a part of the job: supervisor/plan/part_plan.h); end_segment < 0 =
  // to the plan's last.
  JobState(std::string workspace, const JobSpec& job, const JobPlan& plan,
           int64_t chunks_per_segment, int64_t first_segment = 0, int64_t end_segment = -1);

  // What the finished segments were made from, beyond the plan's sizes (the input's and the
  // model's file identity, the settings that shape the frames): a JSON object whose keys Load()
  // compares one by one with the saved one's, naming those that changed. Null (the default):
  // not compared. Set before Load().
  void SetIdentity(nlohmann::json identity) { identity_ = std::move(identity); }

  // Reads state.json, if any, and keeps the finished segments it lists when they belong to this
  // very plan (and range) and are on disk as recorded; then, with `write_back`, writes the state
  // back (and plan.json). An unreadable state or one for another plan starts the job over (with
  // a warning), not an error. Without `write_back` nothing is written: the stitch reads the
  // parts' logs.
  Status Load(bool write_back = true);

  // Segment `index` is on disk (renamed into place, synced) with `bytes` bytes. Rewrites
  // state.json with the finished segments from the first on (with several encoders a later
  // one can finish first; it is recorded once those before it are).
  Status Finished(int64_t index, int64_t bytes);

  // The segments Load() kept: first_segment .. first_segment + resumed() - 1.
  int64_t resumed() const { return resumed_; }
  // Segments of the range finished so far, resumed ones included. Any thread.
  int64_t done() const { return done_.load(); }
  bool all_done() const { return done() == end_ - first_; }

  // The file of segment `index` in the workspace.
  std::string SegmentPath(int64_t index) const;

 private:
  Status Save() REQUIRES(mu_);

  const std::string workspace_;
  const JobSpec& job_;
  const JobPlan& plan_;
  const int64_t chunks_per_segment_;
  const int64_t first_, end_;  // the range of segments logged here
  Mutex mu_;
  // By segment: its file's size once finished, else -1.
  std::vector<int64_t> bytes_ GUARDED_BY(mu_);
  int64_t resumed_ = 0;
  std::atomic<int64_t> done_{0};
  nlohmann::json identity_;  // null = not compared
};

}  // namespace framemill
