// Where the parts of one job meet on shared storage: the directory `<job file>.parts` beside the
// job file holds plan.json (the parts plan, supervisor/plan/part_plan.h, written once by whoever
// starts the job first), one directory per part (`part-I-of-N`: its state.json done-log and its
// finished segments, written by that part alone) and, at the end, the stitch's scratch files.
//
// Safe on NFS and the like: every file is written under a random name in the directory it ends
// in and renamed there (never across file systems), the plan is put in place with a rename that
// never replaces (so two parts starting at once agree on one plan), and nothing waits on file
// events: the stitch runs after the parts (a Slurm dependency) and reads their done-logs.
#pragma once

#include <string>
#include <vector>

#include "common/job_file.h"
#include "common/status.h"
#include "common/user_rights.h"
#include "supervisor/plan/job_plan.h"
#include "supervisor/plan/part_plan.h"

namespace framemill {

// `<job_path>.parts`, absolute (the job's directory resolved).
std::string PartsDirFor(const std::string& job_path);
// `<parts_dir>/part-I-of-N`.
std::string PartDir(const std::string& parts_dir, const PartRef& part);

// The parts plan of `job` cut `count` ways (SplitIntoParts). Errors as SplitIntoParts.
Result<PartsPlan> MakePartsPlan(const JobSpec& job, const JobPlan& plan, int count);

// plan.json of `parts_dir` (created with its parents when missing): the one there when there
// is one, else `mine`, written atomically and without replacing one another process put there
// meanwhile. A plan there that is not `mine` (SamePartsPlan) is an error: the job or its
// input changed since the parts started.
Result<PartsPlan> WritePartsPlanOnce(const std::string& parts_dir, const PartsPlan& mine);

// What `framemill slurm submit` does before submitting: opens and probes the job's input as a run
// does (checked against the config's roots, every packet read for the frame count), plans it,
// cuts it into `count` parts (with `at_most_segments`, fewer when the job has fewer segments) and
// writes the plan once (WritePartsPlanOnce). With a `reader` (the service: the job's submitter),
// the input opened must be that user's to read (common/user_rights.h).
Result<PartsPlan> PlanJobParts(const JobSpec& job, const Config& config, int count,
                               const std::string& parts_dir, bool at_most_segments = false,
                               const UserRights* reader = nullptr);

// Frames of the job whose segments the parts' done-logs list as finished (read only).
int64_t PartsFramesDone(const std::string& parts_dir, const JobSpec& job, const PartsPlan& plan);

// The parts (1-based, ascending) whose done-logs do not list every one of their segments (read
// only): what is left to run before the stitch.
std::vector<int> UnfinishedParts(const std::string& parts_dir, const JobSpec& job,
                                 const PartsPlan& plan);

// plan.json of `parts_dir`. kInvalidJob when missing or malformed.
Result<PartsPlan> ReadPartsPlan(const std::string& parts_dir);

}  // namespace framemill
