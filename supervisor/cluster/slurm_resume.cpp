#include "supervisor/cluster/slurm_resume.h"

#include <cstdio>
#include <map>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "supervisor/job/parts_dir.h"
#include "supervisor/process/subprocess.h"
#include "supervisor/report/job_result.h"

namespace framemill {
namespace {

// squeue's "STATE REASON" of job `id`; "" once it has left the queue.
std::string StateAndReason(const std::string& id) {
  Result<CommandOutput> r = RunAndCapture({"squeue", "-h", "-j", id, "-o", "%T %r"});
  if (!r.ok() || r->exit_code != 0) return "";
  return r->out.substr(0, r->out.find('\n'));
}

std::string JoinInts(const std::vector<int>& v) {
  std::string s;
  for (int i : v) s += (s.empty() ? "" : ",") + std::to_string(i);
  return s;
}

}  // namespace

bool SlurmStateEnded(const std::string& state) {
  for (const char* s : {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                        "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED"}) {
    if (state.rfind(s, 0) == 0) return true;
  }
  return false;
}

Result<SlurmResumed> ResumeOnSlurm(const SlurmPaths& given, const JobSpec& job,
                                   const std::vector<std::string>& extra) {
  SlurmPaths paths = given;
  const std::string& job_abs = paths.job;
  const std::string record_path = paths.record();
  Result<nlohmann::json> record = ReadJsonFile(record_path, 1 << 20, StatusCode::kIo);
  if (!record.ok()) {
    return Status(StatusCode::kInvalidJob, "no Slurm submission of " + job_abs + " to resume (" +
                                               record.status().message() +
                                               "); submit it with `framemill slurm submit`");
  }
  // The submitter the first submission recorded stays the parts' (a resume by hand names none).
  if (paths.submitter.empty() && record->is_object() && record->contains("submitter") &&
      (*record)["submitter"].is_string()) {
    paths.submitter = (*record)["submitter"].get<std::string>();
  }
  const std::string old_array = record->value("array_job", "");
  const std::string old_stitch = record->value("stitch_job", "");
  const std::string& parts_dir = paths.parts_dir;
  Result<PartsPlan> plan = ReadPartsPlan(parts_dir);
  if (!plan.ok()) {
    if (PathExists(job.output)) {
      return Status(StatusCode::kOutputInvalid, "nothing to resume: the job was stitched into " +
                                                    job.output + " (stitch job " + old_stitch +
                                                    ")");
    }
    return Status(StatusCode::kInvalidJob,
                  "cannot resume: " + plan.status().message() + "; submit the job again");
  }
  // Tasks of the array still queued would finish their parts (or be requeued) on their own.
  std::string queued;
  for (const auto& [task, state] : SlurmTaskStates(old_array)) {
    if (SlurmStateEnded(state)) continue;
    queued += (queued.empty() ? "" : ", ") + std::to_string(task) + " (" + state + ")";
  }
  if (!queued.empty()) {
    return Status(StatusCode::kWorkerFailed,
                  "array job " + old_array + " still has tasks queued or running: " + queued +
                      "; wait for them, or scancel them (" + old_array + "_I) and resume");
  }
  const std::vector<int> left = UnfinishedParts(parts_dir, job, *plan);
  if (left.empty() && PathExists(job.output)) {
    return Status(StatusCode::kOutputInvalid,
                  "nothing to resume: every part has finished and " + job.output + " exists");
  }
  const std::string stitch_state = old_stitch.empty() ? "" : StateAndReason(old_stitch);
  if (!stitch_state.empty() && !SlurmStateEnded(stitch_state)) {
    if (stitch_state.rfind("PENDING", 0) != 0) {
      return Status(StatusCode::kWorkerFailed,
                    "stitch job " + old_stitch + " is " + stitch_state + "; let it end first");
    }
    // Pending (DependencyNeverSatisfied, or waiting on the array): the new stitch replaces it.
    Result<CommandOutput> c = RunAndCapture({"scancel", old_stitch});
    if (!c.ok()) return c.status().WithContext("scancel " + old_stitch);
    if (c->exit_code != 0) {
      return Status(StatusCode::kIo,
                    "scancel " + old_stitch + " failed (" + DescribeExit(*c) + "): " + c->err);
    }
  }
  std::vector<std::string> options = extra;
  if (options.empty() && record->contains("sbatch") && (*record)["sbatch"].is_array()) {
    for (const nlohmann::json& o : (*record)["sbatch"]) {
      if (o.is_string()) options.push_back(o.get<std::string>());
    }
  }
  const std::string self = FramemillSelfPath();
  const int count = static_cast<int>(plan->parts.size());
  SlurmResumed resumed;
  resumed.parts = left;
  if (!left.empty()) {
    Result<std::string> array = RunSbatch(SbatchArrayArgs(self, paths, count, job, options, left));
    if (!array.ok()) return array.status();
    resumed.ids.array_job = *array;
  }
  Result<std::string> stitch =
      RunSbatch(SbatchStitchArgs(self, paths, resumed.ids.array_job, options));
  if (!stitch.ok()) return stitch.status();
  resumed.ids.stitch_job = *stitch;

  nlohmann::json updated = *record;
  if (!updated.contains("history") || !updated["history"].is_array()) {
    updated["history"] = nlohmann::json::array();
  }
  updated["history"].push_back({{"array_job", old_array}, {"stitch_job", old_stitch}});
  updated["array_job"] = resumed.ids.array_job;
  updated["stitch_job"] = resumed.ids.stitch_job;
  updated["resumed_parts"] = left;
  updated["sbatch"] = options;
  FM_RETURN_IF_ERROR(AtomicWriteFile(record_path, DumpJson(updated, 1) + "\n"));
  return resumed;
}

int SlurmResumeCommand(const std::string& job_path, const std::vector<std::string>& extra,
                       const std::string& config_path, const Config& config) {
  Result<JobSpec> job = LoadJobFile(job_path, config.defaults);
  if (!job.ok()) {
    std::fprintf(stderr, "framemill: job rejected: %s\n", job.status().ToString().c_str());
    return kExitFailed;
  }
  Result<SlurmResumed> r = ResumeOnSlurm(ResolveSlurmPaths(job_path, config_path), *job, extra);
  if (!r.ok()) {
    std::fprintf(stderr, "framemill: %s\n", r.status().ToString().c_str());
    return ExitCodeOf(r.status().code());
  }
  std::fprintf(stderr, "framemill: resubmitted part(s) %s of %s\n",
               r->parts.empty() ? "none" : JoinInts(r->parts).c_str(), job_path.c_str());
  if (!r->ids.array_job.empty()) std::printf("%s\n", r->ids.array_job.c_str());
  std::printf("%s\n", r->ids.stitch_job.c_str());
  return kExitOk;
}

}  // namespace framemill
