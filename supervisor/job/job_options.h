// What a caller hands RunJob besides the job and the config: where the work is kept, the
// warm and spare workers it may use, its progress and report hooks, a part of the job.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/job_file.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "common/status.h"
#include "common/user_rights.h"
#include "supervisor/plan/part_plan.h"
#include "supervisor/report/job_result.h"
#include "supervisor/workers/dispatcher.h"
#include "supervisor/workers/worker_pool.h"

namespace framemill {

// Workers kept loaded between jobs by a long-running caller (the service). RunJob takes the
// pool when it fits the job (same model file, unchanged; same device and worker count) and,
// after a successful job, gives it back with its idle workers still loaded; otherwise it stops
// it and starts fresh workers. Not thread-safe: one job at a time uses it (the service keeps one
// per GPU set and gives each to one running job).
// The pool keeps the last job's frame arena beside it: a next job that reuses the pool and needs
// an arena of the same geometry takes it as it is (no creation, which zeroes gigabytes, and no
// page-locking again in the workers, which keep it mapped). Only those same workers, or their
// replacements of the same model, ever see what the last job left in it.
struct WarmWorkers {
  std::unique_ptr<WorkerPool> pool;
  std::string key;
  SharedMemory arena;          // empty when none is kept
  ArenaGeometry arena_geometry{};

  // Stops the workers (waiting up to `timeout_ms` for each) and removes the arena.
  void Stop(int timeout_ms);
};

struct JobOptions {
  // Where the job keeps its plan, state and finished segments. "" = a hidden directory beside
  // the output, removed when the job ends. Otherwise the directory is kept, state.json in it
  // records every finished segment (written atomically), and a later run with the same
  // workspace and job resumes: finished segments are kept as they are, the rest is redone.
  std::string workspace;
  // `framemill run`'s kept work (ignored with a workspace): the scratch directory is
  // KeptWorkName(output) (job/kept_work.h) beside the output, mode 0700, this user's, locked while the job runs
  // (a second run of the same output is refused). It is removed once the output is in place,
  // and when the job fails for its input, model, output or job file; otherwise (stopped, a
  // crash, a worker or encoder failure, a full disk, or the process killed) it is kept, and the
  // same job run again continues from its finished segments. Its state.json records what they
  // were made from: the input's and the model's file (device, inode, size, modification time)
  // and `work_settings`; a change to any starts the job over, with a warning naming it.
  bool keep_work = false;
  // With keep_work: what an earlier run kept is thrown away first (`framemill run --fresh`).
  bool fresh_work = false;
  // The probe decodes every picture to find damaged ones inside the stream (ProbeMedia): set by
  // RunJob for the run after one whose decoder showed fewer pictures than the packets promised.
  bool decode_every_picture = false;
  // The settings that shape the frames, as one canonical text (the front's): part of the kept
  // work's identity.
  std::string work_settings;
  // The memory timeline; "" = <output>.timeline.jsonl.
  std::string timeline;
  // Where the report says the timeline is when `timeline` does not outlive the run (the service
  // renames the job's active/<id>/ to done/<id>/ or failed/<id>/ once it is filed): its path
  // then, for a job that ends well and for one that fails. "" = `timeline` itself.
  std::string timeline_filed_done;
  std::string timeline_filed_failed;
  // Called from the supervisor's dispatch thread about every 50 ms while the job runs.
  std::function<void(const JobProgress&)> on_progress;
  // Workers to reuse and to hand back (null: the job starts and stops its own).
  WarmWorkers* warm = nullptr;
  // Spares (WorkerPool::CreateSpares) the job's first workers may take instead of starting
  // processes, where one fits (WorkerPool::Adopt); not owned. A spare not taken stays there.
  std::vector<WorkerPool*> spares;
  // Called on the dispatch thread when the job's first worker took the spare of `from` (one of
  // `spares`): the service starts the next one at once.
  std::function<void(WorkerPool* from)> on_spare_taken;
  // Where workers write their stderr logs; "" = the job's workspace.
  std::string worker_log_dir;
  // When set, each run of the job (a crash retry is another) appends its worker counts here as
  // it ends, whatever its outcome (the report's own `dispatch` is the last run's).
  std::vector<DispatchStats>* attempt_dispatch = nullptr;
  // Whose rights bound the files the job names (the service: the job file's owner). Each file is
  // checked against them on the descriptor it was opened as (job_files.h): the input, the model
  // and its card, the face detector and table, the output directory and the output replaced.
  // Unset: the process's own rights alone (`framemill run` by its user).
  std::optional<UserRights> submitter;
  uint32_t output_reader_uid = UINT32_MAX;  // the service: the submitter, granted read access to
                                            // the output and the report (ACL); UINT32_MAX = none
  // Filled whatever the outcome, also for a job that failed or was cancelled after its workers
  // started (JobReport::report and ::warnings have the same for a finished job). Null = not
  // wanted.
  JobReportFile* report_file = nullptr;
  // false: no report (the service, where the submitter could not replace the file there).
  bool write_report = true;
  // Parts (supervisor/plan/part_plan.h, job/parts_dir.h). With a part (not whole()), the job
  // renders only that part's segments into `workspace` (the part's directory, kept, resumable)
  // and ends there: no mux, no output. `parts_dir` holds the parts plan, written once; the
  // stitch (job/stitch_job.h) joins the parts.
  PartRef part;
  std::string parts_dir;
};

}  // namespace framemill
