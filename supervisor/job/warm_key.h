// Whether the idle workers of an earlier job (WarmWorkers in job_runner.h) fit the next job:
// the same model file, unchanged, the same device, precision, optimization, tile setting, worker
// count, GPUs and log directory. Pure functions, but IdentifyFile.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"

namespace framemill {

// A file as it is now: a change to it (replaced, rewritten, touched) changes this.
struct FileIdentity {
  std::string real_path;  // the path the descriptor resolves to
  uint64_t dev = 0, ino = 0;
  int64_t size = 0;
  int64_t mtime_s = 0, mtime_ns = 0;
};

// The identity of the open file `fd` (fstat; zeros where it fails).
FileIdentity IdentifyFile(int fd);

// Where workers write their logs, as a key: `worker_log_dir` when set; else the job's scratch
// directory (its identity), which workers name as /proc/self/fd/N of that job: such workers fit
// no other job.
std::string LogDirKey(const std::string& worker_log_dir, const FileIdentity& scratch_dir);

// What makes idle workers fit a job: the model file as it is now, the settings the workers were
// started with, and where they log. Equal keys: the workers fit.
std::string WarmKey(const FileIdentity& model, const JobSettings& settings,
                    const std::string& log_dir_key);

// What a job does with the warm pool it is offered.
enum class WarmChoice {
  kStartFresh,  // no pool offered: start workers
  kReuse,       // the pool fits: take it
  kReplace,     // the pool does not fit: stop it while new workers start
};
const char* Name(WarmChoice choice);  // "start fresh", "reuse", "replace"

// `have_pool`: a pool is offered, made for `pool_key`; `job_key`: this job's WarmKey.
WarmChoice ChooseWarm(bool have_pool, const std::string& pool_key, const std::string& job_key);

}  // namespace framemill
