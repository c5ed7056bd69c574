// What a job tells the outside: where its time went (StageTimes), what it made (JobReport),
// where its HTML report went (JobReportFile) and how far it is (JobProgress). Written by the job
// (supervisor/job/), read by the front (result.json, `framemill status`), the HTML report and
// the metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor/workers/dispatcher.h"

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

}  // namespace framemill
