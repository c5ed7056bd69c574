// Runs one job from start to verified output: probe, plan, start workers, decode into the arena,
// dispatch chunks, encode segments, mux, verify. Used by `framemill run` (and later by the
// spool service). Returns only after every child process is gone and every shared-memory object
// it created is removed, whatever the outcome.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/job_spec.h"
#include "common/status.h"
#include "supervisor/dispatcher.h"
#include "supervisor/worker_pool.h"

namespace framemill {

// Where a job's time went, in seconds. In the pipeline the decoder, the workers and the encoder
// run at once: the stage that seldom waits is the bottleneck, the others wait for it.
struct StageTimes {
  double prepare_s = 0;       // path checks, probing the input, the plan
  double start_s = 0;         // workers started and loaded, arena made
  double pipeline_s = 0;      // decoder and encoder threads running
  double decode_s = 0;        // decoder thread reading frames from ffmpeg into the arena
  double decode_wait_s = 0;   // decoder thread waiting for a free arena slot
  double workers_busy_s = 0;  // workers on chunks, summed over workers
  int workers = 0;            // workers wanted (for the busy share)
  double encode_s = 0;        // encoder threads writing frames to ffmpeg, closing segments (summed)
  double encode_wait_s = 0;   // encoder threads waiting for the next chunk's output (summed)
  int encoders = 1;           // encoder threads (for the busy share)
  double mux_s = 0;           // joining segments, audio, verification

  // One line for logs and summaries.
  std::string Summary() const;
  nlohmann::json ToJson() const;
};

struct JobReport {
  std::string output;
  int64_t frames = 0;
  int64_t chunks = 0;
  int64_t segments = 0;
  int in_width = 0, in_height = 0, out_width = 0, out_height = 0;
  // The pixel format the workers were handed: "rgb24", or with color_conversion device the
  // source's own "yuv420p" / "yuvj420p".
  std::string worker_input_format;
  double seconds = 0.0;
  std::string timeline;          // the job's memory timeline (JSON lines)
  std::string report;            // the job report (<output>.report.html); "" = not written (a
                                 // warning says why)
  DispatchStats dispatch;        // workers started, recycles, crashes, kills, retries, peaks
  int64_t segments_resumed = 0;  // segments found finished in the workspace and kept
  StageTimes stages;
  // The sandbox the workers got, as the first one reported it: "landlock abi 7 (fs, tcp,
  // scopes), seccomp, ...", "partial: ...", "none ...", "off" (worker/sandbox.h).
  std::string worker_sandbox;
  int64_t decoder_restarts =
      0;                 // crashed decoders restarted within the job (Config::decoder_restarts)
  int64_t attempts = 1;  // runs of the job: more than 1 after a crash (Config::crash_retries)
  std::vector<std::string> faults_retried;  // every decoder/encoder crash survived, as reported
  nlohmann::json FaultsJson() const;        // {"decoder_restarts", "attempts", "faults_retried"}
  // depth: the output's pixel format (pix_fmt "auto" resolved) and what the job kept less of
  // than the source had (an encoder without the source's depth or layout), or assumed (the
  // matrix of an untagged source), one sentence each.
  std::string output_pix_fmt;
  std::vector<std::string> warnings;
};

// The job report's file (<output>.report.html): where it was written, or why it was not.
struct JobReportFile {
  std::string path;     // "" = not written
  std::string warning;  // "job report not written: ..." when writing it failed
};

struct JobProgress {
  std::vector<WorkerSnapshot> workers;  // the live workers and their current memory
  int64_t frames_total = 0;
  int64_t frames_done = 0;  // frames whose model output is ready (resumed ones included)
  int64_t frames_resumed = 0;  // of those, frames of segments finished by an earlier run
  int64_t segments_done = 0;
  int64_t segments_total = 0;
  // The job's worker counts so far (recycles, crashes, kills by kind); valid during the call.
  const DispatchStats* dispatch = nullptr;
};

// Workers kept loaded between jobs by a long-running caller (the service). RunJob takes the
// pool when it fits the job (same model file, unchanged; same device and worker count) and,
// after a successful job, gives it back with its idle workers still loaded; otherwise it stops
// it and starts fresh workers. Not thread-safe: one job at a time uses it.
struct WarmWorkers {
  std::unique_ptr<WorkerPool> pool;
  std::string key;
};

struct JobOptions {
  // Where the job keeps its plan, state and finished segments. "" = a hidden directory beside
  // the output, removed when the job ends. Otherwise the directory is kept, state.json in it
  // records every finished segment (written atomically), and a later run with the same
  // workspace and job resumes: finished segments are kept as they are, the rest is redone.
  std::string workspace;
  // The memory timeline; "" = <output>.timeline.jsonl.
  std::string timeline;
  // Called from the supervisor's dispatch thread about every 50 ms while the job runs.
  std::function<void(const JobProgress&)> on_progress;
  // Workers to reuse and to hand back (null: the job starts and stops its own).
  WarmWorkers* warm = nullptr;
  // Where workers write their stderr logs; "" = the job's workspace.
  std::string worker_log_dir;
  // When set, each run of the job (a crash retry is another) appends its worker counts here as
  // it ends, whatever its outcome (the report's own `dispatch` is the last run's).
  std::vector<DispatchStats>* attempt_dispatch = nullptr;
  uint32_t output_reader_uid = UINT32_MAX;  // the service: the submitter, granted read access to
                                            // the output and the report (ACL); UINT32_MAX = none
  // Filled whatever the outcome, also for a job that failed or was cancelled after its workers
  // started (JobReport::report and ::warnings have the same for a finished job). Null = not
  // wanted.
  JobReportFile* report_file = nullptr;
  // false: no report (the service, where the submitter could not replace the file there).
  bool write_report = true;
};

// Paths are named once: the input and the model are opened and checked against the config's
// allowed roots on the open descriptor, the output directory likewise; ffprobe, ffmpeg, mkvmerge
// and the workers get those descriptors (/proc/self/fd/N), never the names again. Every file the
// job creates is created exclusively under a random name and renamed into place; the scratch
// directory (without a workspace) is a private, randomly named directory beside the output.
// A decoder or encoder that crashes (killed by a signal) is retried: the decoder within the job
// (Config::decoder_restarts), then the whole job (Config::crash_retries) keeping its finished
// segments; the report lists what was survived. Test-only fault hooks (environment):
// FRAMEMILL_FAULT_KILL_DECODER_AT_FRAME=N kills the decoder once per process before frame N,
// FRAMEMILL_FAULT_TERM_DECODER_AT_FRAME=N makes it exit with an error there (SIGTERM),
// FRAMEMILL_FAULT_KILL_ENCODER_AT_SEGMENT=N kills the encoder of segment N once per process.
//
// Every job that started workers writes a report beside the output, <output>.report.html
// (supervisor/report_file.h), whatever its outcome but kNoSpace (a full disk gets no more
// files); one that cannot be written is a warning, never a failed job.
//
// `stop` is polled: once true the job ends with kCancelled (its workspace, if kept, holds what
// was finished).
Result<JobReport> RunJob(const JobSpec& job, const Config& config, const std::atomic<bool>& stop,
                         const JobOptions& options = JobOptions());

}  // namespace framemill
