// Face mode's job keys (config/README.md): `mode` and, for `"mode": "faces"`, how faces are found,
// aligned into the face model's square input and pasted back. Parsed once where the JSON is read
// (config.cpp's ReadJobSettings, flat keys of the job object), checked as a whole when the job is
// parsed (CheckFaceSetting: job_file.cpp). Plain values, no OpenCV.
#pragma once

#include <optional>
#include <string>

#include "common/face_warp.h"
#include "common/status.h"

namespace framemill {

class FieldReader;

// What the model is given: whole frames, or the aligned faces of each frame (face_warp.h).
enum class JobMode { kFrames, kFaces };
const char* Name(JobMode mode);  // "frames", "faces"
std::optional<JobMode> ParseJobMode(const std::string& name);

// Bounds of face_margin (see FaceSetting::margin) and face_min_size (frame pixels).
inline constexpr double kMinFaceMargin = -0.5;
inline constexpr double kMaxFaceMargin = 2.0;
inline constexpr int kMaxFaceMinSize = 4096;

struct FaceSetting {
  // The face model's square input side S, pixels (kMinFaceSize..kMaxFaceSize).
  int size = 512;
  // Context around the face in the crop. 0: the crop is aligned as the FFHQ faces that GFPGAN and
  // GPEN were trained on (face_align.h: the eyes at 47% of the crop's height, the mouth at 73%,
  // the eye-to-mouth distance 0.256 of the side); m: the crop's side is (1 + m) times that, the
  // face at its centre (the template shrunk by 1 / (1 + m) about the crop's centre), so m = 0.5
  // shows half as much again around the face and m = -0.2 zooms in. kMinFaceMargin..kMaxFaceMargin.
  double margin = 0.0;
  // Faces whose detected box is narrower than this, in frame pixels, are left alone.
  int min_size = 32;
  // Faces per frame, the largest kept (1..kMaxFacesPerFrame).
  int max_faces = 4;
  // Feather width where the restored crop meets the frame, in crop pixels; 0 = size / 16.
  int blend = 0;
  // The BlazeFace ONNX file (scripts/fetch-face-detector.sh). Face mode without it nor `table`
  // takes InstalledFaceDetector().
  std::string detector;
  // A face table written by `framemill faces VIDEO --table FILE` (face_table.h), used instead of
  // detecting: "" = detect.
  std::string table;

  int BlendPixels() const { return blend > 0 ? blend : size / 16; }
};

// The face detector file installed with framemill: the long-range BlazeFace model
// (kInstalledFaceDetector) in <prefix>/share/framemill/face-detector/ beside the running
// program's bin/ (`cmake --install`, the .deb), or, for a program in a build tree inside the
// source tree, the source's .deps/face-detector/ (scripts/fetch-face-detector.sh). "" when
// neither has it.
inline constexpr const char* kInstalledFaceDetector = "face_detection_back_256x256_barracuda.onnx";
std::string InstalledFaceDetector();

// Reads the face keys (face_size, face_margin, face_min_size, max_faces, blend, face_detector,
// face_table) from the object `r` reads, over `*face`; errors are recorded in `r`, naming the key.
void ReadFaceSetting(FieldReader& r, FaceSetting* face);

// The checks that need the whole job: face mode needs face_detector or face_table; blend must
// leave half the crop. kInvalidJob naming the key ("job.face_detector: ...").
Status CheckFaceSetting(JobMode mode, const FaceSetting& face, const std::string& path);

}  // namespace framemill
