// Runs one job from start to verified output: probe, plan, start workers, decode into the arena,
// dispatch chunks, encode segments, mux, verify. Used by `framemill run` and by the spool
// service. Returns only after every child process is gone and every shared-memory object it
// created is removed, whatever the outcome, but for what it hands to WarmWorkers (idle workers
// and their arena) after a clean finish.
#pragma once

#include <atomic>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/job/job_options.h"
#include "supervisor/report/job_result.h"

namespace framemill {

// Paths are named once: the input and the model are opened and checked against the config's
// allowed roots on the open descriptor, the output directory likewise; ffprobe, ffmpeg, mkvmerge
// and the workers get those descriptors (/proc/self/fd/N), never the names again. Every file the
// job creates is created exclusively under a random name and renamed into place; the scratch
// directory (without a workspace) is a private, randomly named directory beside the output.
// A decoder or encoder that crashes (killed by a signal) is retried: the decoder within the job
// (Config::decoder_restarts), then the whole job (Config::crash_retries) keeping its finished
// segments; the report lists what was survived. A run that ends with kNoSpace (a full output,
// scratch or shared-memory file system) waits for space and runs again from its finished
// segments, for up to Config::no_space_wait_s (job/space_wait.h); while it waits, on_progress
// gets its last report again with `waiting` set, about every second.
// A run whose decoder ends before the frames the packets promise (a damaged picture inside the
// stream) is followed, once, by one whose probe decodes every picture first and leaves out those
// that give none (JobOptions::decode_every_picture); its new plan starts the job over. Not for a
// part of a job: the parts and the stitch share one plan.
// Test faults reach the decoder and the encoders through the supervisor's seam for tests,
// job/supervisor_hooks.h (a decoder or an encoder killed at a frame or a segment), which the
// product leaves empty: they are in the tests' build framemill-faults (tests/faults/).
//
// Every job that started workers writes a report beside the output, <output>.report.html
// (supervisor/report/report_file.h), whatever its outcome but kNoSpace (a full disk gets no more
// files); one that cannot be written is a warning, never a failed job.
//
// `stop` is polled: once true the job ends with kCancelled (its workspace, if kept, holds what
// was finished).
Result<JobReport> RunJob(const JobSpec& job, const Config& config, const std::atomic<bool>& stop,
                         const JobOptions& options = JobOptions());

}  // namespace framemill
