// `framemill run` and `framemill stitch`: one job in the foreground, from a job file or from
// arguments (INPUT --model M --output O [KEY=VALUE ...]), with a live progress line on a
// terminal and a summary (or, with --json, the result document) at the end.
//
// A whole run keeps its work: its finished segments are kept beside the output
// (job/kept_work.h) when it is stopped (SIGINT, SIGTERM), killed or fails on the way, and the
// same command continues from them, frame-exact, saying what it kept; a changed input, model or
// setting starts over with a warning naming it; --fresh starts over on purpose; a finished run
// removes them.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/config.h"

namespace framemill {

struct RunArgs {
  // The job file (JSON); or, with `model` and `output`, the input video.
  std::string job_or_input;
  std::string model, output;
  std::vector<std::string> settings;  // KEY=VALUE job keys, over the file's or the defaults
  std::string part;                   // "I/N": one part of a job file's segments (parts_dir.h)
  bool fresh = false;                 // throw away what an earlier run of this output kept
  bool overwrite = false;             // replace an existing output (job key overwrite)
  bool json = false;                  // print the result document instead of the summary
  // "UID:GID" (run and stitch): every file the job names must be that user's to read or write as
  // well, checked on the file opened; the service passes a spool job's submitter to its Slurm
  // parts and stitch. "" = the running user's own rights alone.
  std::string submitter;
};

// The `run` and `stitch` subcommands of `app`: their values go to `run` (stitch: its job file to
// `stitch_job`, its --submitter to run->submitter).
void DefineRunCommands(CLI::App& app, RunArgs* run, std::string* stitch_job);

// Exit codes: supervisor/report/job_result.h (kExitOk, kExitFailed, kExitUsage, kExitStopped).
int RunCommand(const RunArgs& args, const Config& config, const std::atomic<bool>& stop);

// Joins the parts of a job file run with --part into its output.
int StitchCommand(const std::string& job_path, const std::string& submitter, const Config& config,
                  const std::atomic<bool>& stop);

}  // namespace framemill
