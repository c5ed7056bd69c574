// `framemill faces VIDEO --detector F --table OUT`: the face pass (face_pass.h) over a whole
// video, frames upright as a job's decoder makes them (the config's deinterlace default), so that
// a machine without OpenCV can run face mode from the table (job key `face_table`). ffmpeg's log
// goes to a private temporary directory, removed afterwards. Thread-safe (no shared state).
#pragma once

#include <atomic>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/faces/face_pass.h"

namespace framemill {

// Errors: the video's (kInputMissing, kInputInvalid: ffprobe's or ffmpeg's words), the face
// pass's (the detector file, OpenCV's words, kCancelled).
Result<FaceTable> MakeVideoFaceTable(const Config& config, const std::string& video,
                                     const FacePassOptions& options, const std::atomic<bool>& stop);

// One line for people: frames, faces, tracks, detection time.
std::string DescribeFaceTable(const FaceTable& table);

}  // namespace framemill
