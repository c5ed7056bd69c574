// `framemill slurm submit JOB --parts N [-- sbatch options]` and `framemill slurm status JOB`: one
// job spread over a Slurm cluster. Submit writes the parts plan beside the job (job/parts_dir.h),
// then submits an array job of N tasks (task I runs `framemill run JOB --part I/N`, requeueable:
// a requeued task resumes from its part's done-log) and a stitch job that depends on it
// (`afterok`: it runs `framemill stitch JOB` once every part has finished). Both write their logs
// into `<JOB>.slurm/` beside the job (SlurmLogsDirFor). Status reads the parts' done-logs and asks squeue about the tasks.
// Resume (slurm_resume.h) submits again the parts a cancelled or failed task left unfinished.
//
// The job file, its input, model and output directory and the parts directory must be on
// storage every node sees under the same names (README.md, "Shared storage").
#pragma once

#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/job/parts_dir.h"

namespace framemill {

struct SlurmArgs {
  int parts = 0;                    // submit: N
  std::vector<std::string> sbatch;  // submit, resume: options passed to sbatch for the array job
  bool json = false;                // status
};

// The ids sbatch gave: the array job (its tasks are ID_1 .. ID_N) and the stitch job.
struct SlurmIds {
  std::string array_job;
  std::string stitch_job;
};

// `<logs dir>/slurm.json`: the ids of the submission (and of each resume: slurm_resume.h) and the
// sbatch options given.
inline constexpr const char* kSlurmRecord = "slurm.json";

// Where one job's Slurm files are, resolved once where a command or the service starts on the
// job and passed down: the job file and the config given (absolute; "" = none), the parts
// directory beside the job (job/parts_dir.h), and `<job>.slurm`, the Slurm logs of the parts and
// the stitch (slurm-ARRAY_I.out, slurm-ID-stitch.out) and slurm.json, the ids of the submission.
// The logs are kept after the stitch.
struct SlurmPaths {
  std::string job;
  std::string config;
  std::string parts_dir;
  std::string logs_dir;
  // "UID:GID" of the spool job's submitter ("" = none: a job of whoever runs the command). The
  // parts and the stitch get it as `--submitter`, and check every file the job names against
  // that user's rights when they open it (JobOptions::submitter); slurm.json records it for a
  // later resume.
  std::string submitter;
  std::string record() const { return logs_dir + "/" + kSlurmRecord; }
};
SlurmPaths ResolveSlurmPaths(const std::string& job_path, const std::string& config_path = "");

// The ids slurm.json records (empty strings when nothing was submitted or it cannot be read).
SlurmIds RecordedSlurmIds(const SlurmPaths& paths);

// The command line of one submission (exposed for tests): `framemill` is this binary's absolute
// path, `paths.config` "" = none given (the environment travels with the job: sbatch's default
// --export=ALL). Options in `extra` go to the array job; the stitch job gets those that are not
// about GPUs (--gres, --gpus*, --gpus-per-*) nor about the array. A job whose device is CUDA
// and whose `extra` names no GPUs asks for one GPU per task (`--gres=gpu:1`, or as many as its
// `gpus` lists). `tasks` (1-based) = the parts to run (`--array=2,3`); empty = all N. An empty
// `array_job` gives a stitch job without a dependency.
std::vector<std::string> SbatchArrayArgs(const std::string& framemill, const SlurmPaths& paths,
                                         int parts, const JobSpec& job,
                                         const std::vector<std::string>& extra,
                                         const std::vector<int>& tasks = {});
std::vector<std::string> SbatchStitchArgs(const std::string& framemill, const SlurmPaths& paths,
                                          const std::string& array_job,
                                          const std::vector<std::string>& extra);

// Runs sbatch with `argv` (argv[0] "sbatch"); its job id. Errors: kIo with sbatch's message.
Result<std::string> RunSbatch(const std::vector<std::string>& argv);

// squeue's state of each task of `array_job` still queued (pending, running, completing):
// task index -> state ("RUNNING"). Empty when squeue fails or knows none.
std::map<int, std::string> SlurmTaskStates(const std::string& array_job);

// This running binary's absolute path ("framemill" when /proc cannot say).
std::string FramemillSelfPath();

// The job id in sbatch --parsable output ("ID" or "ID;cluster"); kIo when there is none.
Result<std::string> ParseParsableId(const std::string& out);

// Submits the array job of `plan`'s parts (PlanJobParts wrote it into paths.parts_dir) and the
// stitch job after it, and records their ids and `extra` in slurm.json. Errors: kIo with
// sbatch's message, or writing slurm.json.
Result<SlurmIds> SubmitToSlurm(const SlurmPaths& paths, const JobSpec& job, const PartsPlan& plan,
                               const std::vector<std::string>& extra);

// Adds `slurm` with `submit`, `status` and `resume` to `app`; values go to `job_path` and `args`.
void DefineSlurmCommands(CLI::App& app, std::string& job_path, SlurmArgs* args);

// Runs the `slurm` command `slurm_cmd` parsed; returns the exit code.
int SlurmCommand(const CLI::App& slurm_cmd, const std::string& config_path,
                 const std::string& job_path, const SlurmArgs& args, const Config& config);

}  // namespace framemill
