// `framemill preview JOB.json [--frames K]`: a look at a job before committing a night to it.
// Takes a short run of consecutive frames at K times spread over the input, by seeking (never
// decoding the video between them), runs them through the job's real pipeline (RunJob: the same
// model, device, precision, batch and encoder settings, with the workers the job puts on one
// device), writes a contact sheet of before/after pairs to `<output>.preview.png` and estimates
// the whole job: its duration on this machine, its output's size and each worker's peak memory
// (supervisor/job/preview_estimate.h).
//
// Files: the input is opened and checked once against the config's input roots, the output's
// directory against the output roots; everything the preview makes (the sampled clip, the
// pipeline's output and scratch) lives in a private directory `.framemill-preview.<random>/`
// beside the output, removed on every path out. The contact sheet is created there under a
// random name beside the output, fsynced and renamed into place (replacing an older sheet). The
// job's output itself is never written.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/media/contact_sheet.h"
#include "supervisor/job/preview_estimate.h"

namespace framemill {

inline constexpr int kDefaultPreviewFrames = 6;
inline constexpr int kMaxPreviewFrames = 64;

struct PreviewOptions {
  int frames = kDefaultPreviewFrames;  // K, 1..kMaxPreviewFrames
};

struct PreviewReport {
  std::string contact_sheet;   // the PNG written: <output>.preview.png
  SheetLayout layout;          // its geometry: width() x height() pixels
  std::vector<double> times;   // the samples, seconds from the file's start
  int frames_per_sample = 1;   // consecutive frames taken from each sample on
  int64_t frames_decoded = 0;  // frames ffmpeg decoded to get them (ffmpeg's own count)
  int64_t source_frames = 0;   // the source's frames (container's count, else duration x rate)
  double source_seconds = 0;
  // The model enlarges the frame: each row is a 1:1 crop of the output's middle beside the same
  // region of the source scaled to the output's size with bicubic (not both scaled to the cell).
  bool crops = false;
  PreviewEstimate estimate;

  // Stable field names (docs/formats.md): contact_sheet, width, height, frames, times,
  // frames_per_sample, frames_decoded, source_frames, source_seconds, crops, estimate
  // (PreviewEstimate::ToJson).
  nlohmann::json ToJson() const;
  std::string ToText() const;
};

// Errors: kInvalidJob (K out of range), kInternal for a build without OpenCV (the message says
// so; checked before anything runs), the errors of RunJob for the sampled run, kInputInvalid
// when a sampled time gives no frame, kIo / kNoSpace writing files. `stop` is polled by the
// pipeline run (kCancelled).
Result<PreviewReport> RunPreview(const JobSpec& job, const Config& config,
                                 const std::atomic<bool>& stop, const PreviewOptions& options);

}  // namespace framemill
