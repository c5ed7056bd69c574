// The one call a face-mode job makes before its first frame: the FaceTable of its frames
// [first, end), read from the job's `face_table` (checked against the job: frame size, the
// video's frame count, face_size, the frames needed) or made by the face pass with its
// `face_detector` (loaded before any frame is decoded, so a bad file fails the job at once).
// Thread-safe (no shared state).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/faces/face_pass.h"
#include "supervisor/faces/face_table.h"

namespace framemill {

struct JobFacesInput {
  const SourceFile* source = nullptr;  // the job's open input (not owned)
  const MediaInfo* media = nullptr;    // its probe
  std::vector<std::string> filters;    // the decoder's upright filters (FacePassInput::filters)
  int64_t first = 0;                   // the job's (or part's) frames [first, end); end 0 = all
  int64_t end = 0;
  std::string stderr_path;   // the face pass's ffmpeg log
  std::string detector_log;  // framemill-face-detector's
  int threads = 0;          // detection threads; 0 = the machine's cores
  std::function<void()> beat;  // after each batch of the face pass (FacePassOptions::beat)
};

// `settings.mode` must be kFaces. The table holds exactly frames [first, end) (first_frame =
// first). Errors: ReadFaceTable's and CheckFaceTable's (naming job.face_table), RunFacePass's.
Result<FaceTable> FacesForJob(const Config& config, const JobSettings& settings,
                              const JobFacesInput& input, const std::atomic<bool>& stop);

}  // namespace framemill
