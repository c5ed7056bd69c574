// The files a job names, opened once and checked on the open descriptor (the input, the model,
// the output directory), and its scratch directory: kept across the attempts of one RunJob, so
// that a retry after a crash reads the same files and keeps the finished segments.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/checked_file.h"
#include "common/file_util.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/job/job_options.h"
#include "supervisor/media/media_probe.h"
#include "supervisor/workers/timeline.h"

namespace framemill {

struct JobFiles {
  // Whose rights each file named is checked against as it is opened (JobOptions::submitter);
  // null: none but the process's own. Not owned.
  const UserRights* user = nullptr;
  // Named once: the checked, open input, model and output directory.
  UniqueFd input, model, output_dir;
  UniqueFd face_detector, face_table;  // face mode: the job's own, when it names them
  // model_optimization compile: the compiled engine the workers run instead of the model, open
  // and checked (supervisor/engines/engine_choice.h); not valid when they run the model.
  UniqueFd engine;
  std::string output_name;   // the output's name in output_dir
  UniqueFd dir;              // the scratch directory, open
  std::string private_name;  // "" = the caller's workspace (kept); else removed at the end
  std::string kept_name;     // keep_work: the kept work's name in output_dir
  UniqueFd kept_lock;        // keep_work: its lock, on a descriptor no child inherits
  int64_t segments_done = 0;  // in the scratch directory after the last run, resumed ones too
  // The caller's workspace's note of the output an earlier run placed (kPlacedOutputNote), and
  // whether the output found at the name is that file: a service killed between placing the
  // output and filing the job finds its own output there, and replaces it rather than refusing.
  std::string placed_note;
  bool output_is_ours = false;
  // A name of the open scratch directory: valid here and in every child that inherits it.
  std::string path() const { return FdPath(dir.get()); }
};

// Opens and checks the input, the model and the output directory (each once per RunJob: a retry
// uses the files the first attempt opened); refuses an output that exists (without overwrite)
// or is a directory, and an output directory that is not writable; with `files->user`, each as
// that user could (kPathNotAllowed: read the input and the model, create files in the output
// directory, replace an output there). Returns the input as ffprobe and ffmpeg get it (its
// descriptor and the config's input restrictions).
Result<SourceFile> OpenJobPaths(const JobSpec& job, const Config& config, JobFiles* files);

// Face mode: the job's face detector and face table, opened once and checked as the model and
// the input are (a regular file inside the config's model or input roots; the detectors
// installed with framemill are the product's own, their folder a root too). Returns the job's face
// settings with their paths turned into the open descriptors' names (/proc/self/fd/N), which
// every later reader (OpenCV's ONNX reader among them) opens instead. With `files->user`, each
// must be readable by that user.
Result<FaceSetting> OpenFaceFiles(const JobSpec& job, const Config& config, JobFiles* files);

// The scratch directory, once per RunJob: without a workspace, a private directory (mode 0700,
// random name) in the output directory, or with keep_work the kept work (job/kept_work.h); with
// one, the caller's directory, made and opened.
Status OpenScratch(const JobSpec& job, const JobOptions& options, JobFiles* files);

// The job's memory timeline, created in place (a link planted there is replaced, not
// followed): options.timeline, else <output>.timeline.jsonl in the checked output directory.
Status OpenTimeline(const JobSpec& job, const JobOptions& options, const JobFiles& files,
                    uint64_t t0_ms, Timeline* timeline);

// RunJob's end, whatever the outcome: a private scratch directory goes; the kept work goes once
// the output is in place (`done`) or when the job could not start as it is (KeepsWork), removed
// while still locked; then the lock is released.
void CloseJobFiles(JobFiles* files, bool done, const Status& failure);

}  // namespace framemill
