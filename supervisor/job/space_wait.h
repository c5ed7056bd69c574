// A full disk is a pause, not a loss: a job run that ended with kNoSpace (its output, scratch or
// shared-memory file system full, or not enough free for it to start) waits, its workers stopped
// and its finished segments kept, until space returns, then runs again from those segments; after
// Config::no_space_wait_s without space it fails with the kNoSpace that stopped it.
//
// "Space returned" is read off the file systems (statvfs): one of them gained free space since
// the run failed and the job's own estimate of what it still writes fits (free_space.h). "Since
// the run failed" is the lowest of the readings taken when it failed (JobRun::SpaceAtFailure)
// and when the wait began: space freed while the run was being torn down (its workers stopped,
// its threads joined: seconds on a loaded machine) counts as returned. A quota
// (EDQUOT) does not show in statvfs, and an estimate can be wrong: the job also tries again on a
// backoff (kFirstRetryMs, doubling up to kMaxRetryMs) whatever the figures say.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/status.h"
#include "supervisor/job/free_space.h"
#include "supervisor/job/job_files.h"

namespace framemill {

inline constexpr int64_t kSpacePollMs = 1000;       // how often the file systems are read
inline constexpr int64_t kFirstRetryMs = 30000;     // a run again, whatever they say, after this
inline constexpr int64_t kMaxRetryMs = 240000;      // and at most this far apart
inline constexpr int64_t kSpaceGrowthBytes = 1 << 20;  // "gained free space": at least this

// Where a job writes, and what it still needs there when known.
struct SpaceWatch {
  std::string scratch_dir;  // "" = none yet
  std::string output_dir;
  std::string shm_dir = "/dev/shm";
  std::optional<SpaceNeeded> need;  // the run's estimate (JobRun::SpaceNeed), when it got that far
};

// Free bytes in each directory of `w` now (-1 where unknown).
struct SpaceReading {
  int64_t scratch = -1, output = -1, shm = -1;
};
SpaceReading ReadSpace(const SpaceWatch& w);
// Per file system, the lower of two readings (a known one over an unknown one). Pure.
SpaceReading Lowest(const SpaceReading& a, const SpaceReading& b);
// The job's scratch and output directories, those of `files` that are open.
SpaceWatch JobSpaceWatch(const JobFiles& files);

// Whether to run again: some file system gained kSpaceGrowthBytes since `at_failure` and the
// need, when known, fits in `now`. Pure.
bool SpaceReturned(const SpaceWatch& w, const SpaceReading& at_failure, const SpaceReading& now);

// One episode of waiting after a run failed with `why` (kNoSpace), until `deadline_ms` (monotonic);
// `at_failure`: the reading taken when it failed, if any; `retry` is how many runs this episode
// made already (its backoff). Returns Ok when the job should run again (space returned, or the
// backoff's time came), `why` with the time waited once the deadline passes, kCancelled when `stop`
// is set. Calls `report(text, waited_s)` about every second with what it waits for, and logs when
// it starts and how it ends.
Status WaitForSpace(const SpaceWatch& watch, const Status& why,
                    const std::optional<SpaceReading>& at_failure, uint64_t deadline_ms, int retry,
                    const std::atomic<bool>& stop,
                    const std::function<void(const std::string&, double)>& report);

// The backoff before run number `retry` (0-based) of one episode: kFirstRetryMs doubling, at most
// kMaxRetryMs. Pure.
int64_t SpaceRetryDelayMs(int retry);

}  // namespace framemill
