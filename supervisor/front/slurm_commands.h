// `framemill slurm submit JOB --parts N [-- sbatch options]` and `framemill slurm status JOB`: one
// job spread over a Slurm cluster. Submit writes the parts plan beside the job (job/parts_dir.h),
// then submits an array job of N tasks (task I runs `framemill run JOB --part I/N`, requeueable:
// a requeued task resumes from its part's done-log) and a stitch job that depends on it
// (`afterok`: it runs `framemill stitch JOB` once every part has finished). Both write their logs
// into `<JOB>.slurm/` beside the job (SlurmLogsDirFor). Status reads the parts' done-logs and asks squeue about the tasks.
//
// The job file, its input, model and output directory and the parts directory must be on
// storage every node sees under the same names (README.md, "Shared storage").
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"

namespace framemill {

struct SlurmArgs {
  int parts = 0;                    // submit: N
  std::vector<std::string> sbatch;  // submit: options passed to sbatch for the array job
  bool json = false;                // status
};

// The ids sbatch gave: the array job (its tasks are ID_1 .. ID_N) and the stitch job.
struct SlurmIds {
  std::string array_job;
  std::string stitch_job;
};

// `<job_path>.slurm`, absolute: the Slurm logs of the parts and the stitch (slurm-ARRAY_I.out,
// slurm-ID-stitch.out) and slurm.json, the ids of the submission. Kept after the stitch.
std::string SlurmLogsDirFor(const std::string& job_path);

// The command line of one submission (exposed for tests): `framemill` is this binary's absolute
// path, `config_path` "" = none given (the environment travels with the job: sbatch's default
// --export=ALL). Options in `extra` go to the array job; the stitch job gets those that are not
// about GPUs (--gres, --gpus*, --gpus-per-*) nor about the array. A job whose device is CUDA
// and whose `extra` names no GPUs asks for one GPU per task (`--gres=gpu:1`, or as many as its
// `gpus` lists).
std::vector<std::string> SbatchArrayArgs(const std::string& framemill, const std::string& config_path,
                                         const std::string& job_path, const std::string& logs_dir,
                                         int parts, const JobSpec& job,
                                         const std::vector<std::string>& extra);
std::vector<std::string> SbatchStitchArgs(const std::string& framemill,
                                          const std::string& config_path,
                                          const std::string& job_path, const std::string& logs_dir,
                                          const std::string& array_job,
                                          const std::vector<std::string>& extra);

// The job id in sbatch --parsable output ("ID" or "ID;cluster"); kIo when there is none.
Result<std::string> ParseParsableId(const std::string& out);

// Writes the parts plan, submits both jobs and records their ids in <parts dir>/slurm.json.
// `job_path` is made absolute first. Errors: the plan's, or kIo with sbatch's message.
Result<SlurmIds> SubmitToSlurm(const std::string& job_path, const JobSpec& job, int parts,
                               const std::vector<std::string>& extra,
                               const std::string& config_path, const Config& config);

// Adds `slurm` with `submit` and `status` to `app`; values go to `job_path` and `args`.
void DefineSlurmCommands(CLI::App& app, std::string& job_path, SlurmArgs* args);

// Runs the `slurm` command `slurm_cmd` parsed; returns the exit code.
int SlurmCommand(const CLI::App& slurm_cmd, const std::string& config_path,
                 const std::string& job_path, const SlurmArgs& args, const Config& config);

}  // namespace framemill
