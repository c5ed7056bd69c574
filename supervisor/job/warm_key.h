// Whether the idle workers of an earlier job (WarmWorkers in job_runner.h) fit the next job:
// the same submitter, the same model file, unchanged, the same launch settings (JobLaunch,
// compared as encoded for the workers), worker count, GPUs and log directory. Pure functions, but
// IdentifyFile.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/worker_launch.h"

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

// The launch settings (common/worker_launch.h) a job's settings give each of its workers: the
// device, precision, optimization, autotune and tile. The rest (the probe's input, log level,
// sandbox, and each worker's own) the caller fills in.
WorkerLaunch JobLaunch(const JobSettings& settings);

// What makes idle workers fit a job: who submitted it, the model file as it is now, the settings
// the workers were started with, and where they log. Equal keys: the workers fit.
// `submitter_uid` is the job's submitter (the service's JobOptions::output_reader_uid; UINT32_MAX
// where the caller runs its own jobs only, as `framemill run`). Workers are never shared between
// submitters: a model may keep state (frames it saw) from one job to the next, and the pool keeps
// the last job's arena, frames and all, for the next one.
std::string WarmKey(uint32_t submitter_uid, const FileIdentity& model, const JobSettings& settings,
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
