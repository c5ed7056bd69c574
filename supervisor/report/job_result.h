// What a job tells the outside: where its time went (StageTimes), what it made (JobReport),
// where its HTML report went (JobReportFile) and how far it is (JobProgress). Written by the job
// (supervisor/job/), read by the front (result.json, `framemill status`), the HTML report and
// the metrics.
//
// This is also the one home of what the front writes from them: the spool's result.json
// (DoneResultJson, FailedResultJson) and progress.json (ProgressJson) and the lines people read
// from them (RunSummary, ProgressLine, ProgressWorkerLines), and the exit codes of the
// `framemill` commands (ExitCodeOf, kExitCodesHelp). Their keys and words are stable: scripts
// read them (README.md, "Scripting"). Free functions over values; thread-compatible.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "supervisor/report/face_figures.h"
#include "supervisor/workers/dispatcher.h"

namespace framemill {

// Where a job's time went, in seconds. In the pipeline the decoder, the workers and the encoder
// run at once: the stage that seldom waits is the bottleneck, the others wait for it.
struct StageTimes {
  double prepare_s = 0;       // path checks, probing the input, the plan
  double faces_s = 0;         // face mode: the face pass (or reading its table), before workers
  double start_s = 0;         // workers started and loaded, arena made
  double workers_wait_s = 0;  // of start_s: until the first worker was ready (near 0 when warm)
  double pipeline_s = 0;      // decoder and encoder threads running
  double decode_s = 0;        // decoder thread reading frames from ffmpeg into the arena
  double decode_wait_s = 0;   // decoder thread waiting for a free arena slot
  // Of start_s: the decoder's reading while the workers started (the early decoder: its first
  // chunks ready for the first worker). decode_s and decode_wait_s are the pipeline's own.
  double decode_early_s = 0;
  double workers_busy_s = 0;  // workers on chunks, summed over workers
  int workers = 0;            // workers wanted (for the busy share)
  double encode_s = 0;        // encoder threads writing frames to ffmpeg, closing segments (summed)
  double encode_wait_s = 0;   // encoder threads waiting for the next chunk's output (summed)
  int encoders = 1;           // encoder threads (for the busy share)
  // Of pipeline_s: from the workers' last chunk to the last segment written (the encoders'
  // trail behind the workers: the last chunks' encoding, closing the last segments).
  double tail_s = 0;
  double mux_s = 0;           // joining segments, audio, verification
  // After the output is in place: waiting for the workers to exit (a job that keeps them loaded
  // for the next, in the service, waits for none; a CUDA worker's exit tears its device down).
  double stop_s = 0;

  // One line for logs and summaries.
  std::string Summary() const;
  nlohmann::json ToJson() const;
};

// result.json's skipped_packets.reason: for packets skipped before the first picture that
// decodes, and for damaged pictures inside the stream (both, joined by "; ", where both were).
inline constexpr const char* kLeadingPacketsReason =
    "leading packets before the first decodable picture";
inline constexpr const char* kDamagedPicturesReason = "damaged pictures that do not decode";

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
  int64_t frames_resumed = 0;    // the frames of those segments (not rendered by this run)
  StageTimes stages;
  // The workers were warm: the first ready one was kept loaded from the service's previous job
  // (warm_key.h), not started for this one. stages.workers_wait_s is the wait either way.
  bool workers_warm = false;
  // The first ready worker was a spare the service had started before the job, its device ready
  // and no model loaded (WorkerPool::CreateSpares): the job's wait was the model's load alone.
  bool workers_spare = false;
  // How the output was joined: "live" (beside the render: supervisor/media/live_mux.h) or "after"
  // (once every segment was encoded: the job's live_mux off, a variable-frame-rate source, a
  // stitch of parts, or a live mux that failed, with a warning). "" = no output (a part).
  std::string mux;
  // How the job got its frame arena: "kept" (the previous job's, beside the warm workers it
  // reused: WarmWorkers), "early" (made while the workers started, from a right guess of its
  // geometry) or "made" (after the workers' probe). "" = no arena (no workers started).
  std::string arena;
  // The sandbox the workers got, as the first one reported it: "landlock abi 7 (fs, tcp,
  // scopes), seccomp, ...", "partial: ...", "none ...", "off" (worker/sandbox/sandbox.h).
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
  // What of the source was not rendered, as a player would not show it: packets skipped before
  // the first picture that decodes (a capture that begins mid-stream), and frames a truncated
  // input accepted (the job's truncated_input) announces but lacks.
  int64_t skipped_packets = 0;
  int64_t damaged_pictures = 0;  // of skipped_packets: damaged pictures inside the stream
  std::string SkippedPacketsReason() const;  // "" when none were skipped
  int64_t frames_announced = 0;  // truncated input accepted: its header's count; 0 = not truncated
  double frame_rate = 0;         // of the source, for the seconds lost
  nlohmann::json SkippedPacketsJson() const;  // {"count", "reason"} ("" when none)
  nlohmann::json TruncatedJson() const;  // {"frames_announced", "frames_rendered", "frames_lost",
                                         // "seconds_lost"}; null when the input was whole
  std::vector<std::string> warnings;
  FaceFigures faces;  // face mode: result.json's "faces" (absent in frames mode)
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
  // Frames written to the encoders (resumed ones included): what the job has truly done; the
  // model's count runs ahead of it by the arena's depth, and by much on an encode-bound job.
  int64_t frames_written = 0;
  int64_t segments_done = 0;
  int64_t segments_total = 0;
  // Why the job waits with its workers stopped ("" = it runs): a full disk (job/space_wait.h).
  std::string waiting;
  double waiting_s = 0;  // how long it has waited so far
  // The job's worker counts so far (recycles, crashes, kills by kind); valid during the call.
  const DispatchStats* dispatch = nullptr;
};

// ---- Exit codes of the `framemill` commands ----
inline constexpr int kExitOk = 0;         // success (also --help)
inline constexpr int kExitFailed = 1;     // the job or command failed; the message names why
inline constexpr int kExitUsage = 2;      // an unknown option or a missing argument, named
inline constexpr int kExitNoSuchJob = 3;  // status, cancel, retry: no job of that id
inline constexpr int kExitStopped = 130;  // stopped by SIGINT/SIGTERM (or cancelled)
// The line `framemill --help` ends with.
inline constexpr const char* kExitCodesHelp =
    "Exit codes: 0 ok, 1 failed, 2 usage error, 3 no such job, 130 stopped.";
// The exit code of a command that ended with `code`: kExitOk, kExitStopped for kCancelled,
// kExitFailed for any other error.
int ExitCodeOf(StatusCode code);

// ---- result.json: what a spool job ended with ----
// Every key below is written with version 1; "status" is "done" or "failed".
inline constexpr int kResultVersion = 1;

// A moment as result.json gives it: UTC, ISO 8601 to the second ("2026-12-01T13:15:27Z").
std::string IsoUtc(std::time_t t);
// Now, as IsoUtc.
std::string IsoNow();

// {"version", "id", "status": "done", "output", "frames", "seconds", "started_at",
// "finished_at", "workers_started", "recycles", "recycles_by_reason", "crashes", "kills",
// "chunk_retries", "segments", "segments_resumed", "frames_resumed", "stages",
// "worker_input_format", "output_pix_fmt", "warnings", "worker_sandbox", "worker_start",
// "workers_wait_s", "workers_warm", "workers_spare", "mux", "faults", "model_fallbacks",
// "skipped_packets", "truncated"} of a finished job.
nlohmann::json DoneResultJson(const std::string& id, const JobReport& r,
                              const std::string& started_at, const std::string& finished_at);
// {"version", "id", "status": "failed", "reason": {"code", "message"}} of a job that failed, was
// cancelled or is no job; `reason_code` is a StatusCodeName or a code of the service's own
// ("crashed"). The caller adds what it knows ("finished_at", "started_at", "work_kept", ...).
nlohmann::json FailedResultJson(const std::string& id, const std::string& reason_code,
                                const std::string& message);
// The same with the reason from `s` (StatusCodeName of its code, its message).
nlohmann::json FailedResultJson(const std::string& id, const Status& s);
// The reason code of a result.json read back ("" when it has none: a done job, a damaged file).
std::string ResultReasonCode(const nlohmann::json& result);
// The output of a result.json read back ("" when it has none).
std::string ResultOutput(const nlohmann::json& result);

// {"events": out-of-memory errors the workers met, "batch": the fewest items (frames, or tiles
// once tiled) per model call they were left with or null, "tile": the smallest tile side they
// fell back to or null} (worker/model/tiled_model.h).
nlohmann::json ModelFallbacksJson(const DispatchStats& d);
// "the model ran out of memory 3 times: now 1 per call, tiles of 184 px"; "" when it never did.
std::string ModelFallbacksLine(const DispatchStats& d);

// The lines `framemill run` prints for a finished job (each "framemill: ...", newline-ended).
std::string RunSummary(const JobReport& r);

// Recycles of every reason.
int TotalRecycles(const DispatchStats& d);

// ---- progress.json: how far a running spool job is ----
// Frames per second over `seconds` (0 when no time passed).
double FramesPerSecond(int64_t frames, double seconds);
// Seconds left at `fps` (0 when the rate is unknown).
double EtaSeconds(int64_t frames_done, int64_t frames_total, double fps);
// "h:mm:ss" ("1:02:03", "0:00:15") of a duration in seconds, rounded.
std::string DurationText(double seconds);
// "12.0 fps, ETA 0:00:15"; "no rate yet" while `fps` is 0 (nothing rendered by this run yet).
std::string RateText(int64_t frames_done, int64_t frames_total, double fps);

// {"id", "frames_done", "frames_total", "segments_done", "segments_total", "elapsed_s", "fps",
// "workers": [{"worker", "gen", "pid", "frames", "rss_mb", "gpu_reserved_mb"}]} of job `id`,
// `elapsed_s` seconds after its start.
nlohmann::json ProgressJson(const std::string& id, const JobProgress& p, double elapsed_s);
// A progress.json read back, in one line: "120/300 frames (40.0%), 12.0 fps, ETA 15 s", with
// ", on GPUs [0, 1]" when it has "service_gpus" (the service's GPUs the job holds); "waiting for
// GPUs [0, 1]" (or "waiting for a free GPU") for the service's {"id", "waiting_for_gpus": [...]}
// of a job queued for GPUs; "starting" when there is none yet (not an object).
std::string ProgressLine(const nlohmann::json& progress);
// Its workers, a line each (no newline): "worker 0 gen 1 pid 42: 40 frames, rss 100 MiB, gpu
// reserved 0 MiB".
std::vector<std::string> ProgressWorkerLines(const nlohmann::json& progress);

}  // namespace framemill
