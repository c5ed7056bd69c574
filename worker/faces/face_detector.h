// BlazeFace face detection with OpenCV's dnn module: MediaPipe's short-range (128 x 128) or
// long-range (256 x 256) model, as the ONNX files scripts/fetch-face-detector.sh fetches, run on
// the CPU inside framemill-face-detector (face_detector_main.cpp), the confined process where a
// user's ONNX file is parsed; never in the supervisor (common/face_detection.h).
//
// Built where CMake finds OpenCV's dnn module (FRAMEMILL_HAVE_OPENCV_DNN); in a build without it
// Load fails with a message that says so, and nothing else changes.
//
// Thread safety: a FaceDetector is used by one thread at a time (OpenCV's Net keeps per-run
// state); make one per thread. Movable, not copyable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/face.h"
#include "common/face_detection.h"
#include "common/status.h"

namespace framemill {


enum class ChannelOrder { kRgb, kBgr };
const char* Name(ChannelOrder order);  // "rgb" | "bgr"

// A picture in memory, 8 bits per channel, 3 channels interleaved, not owned.
struct ImageView {
  const uint8_t* pixels = nullptr;
  int width = 0;
  int height = 0;
  int64_t row_bytes = 0;  // from one row's start to the next's, at least width * 3
  ChannelOrder order = ChannelOrder::kRgb;
};

class FaceDetector {
 public:
  // Reads the ONNX file's bytes `onnx` (named `name` in messages) and runs it on a blank picture
  // of 128, then 256 pixels a side to learn its input size (the one it runs at and answers with
  // 896 anchors) and check its outputs (two score tensors and two box tensors of 16 values per
  // anchor). Errors: kModelInvalid with OpenCV's own words when it cannot read or run the file,
  // or a description of the outputs that are not BlazeFace's; kInternal in a build without
  // OpenCV's dnn module.
  static Result<FaceDetector> Load(const std::vector<uint8_t>& onnx, const std::string& name,
                                   const FaceDetectorOptions& options);

  FaceDetector(FaceDetector&&) noexcept;
  FaceDetector& operator=(FaceDetector&&) noexcept;
  ~FaceDetector();

  // The faces in `image`, in its pixel coordinates, best first; a detection whose box lies wholly
  // outside the picture (in the padding around it) is left out. Errors: kInputInvalid (an empty
  // image or a bad row_bytes), kModelInvalid (OpenCV failed to run the model: its message).
  Result<std::vector<Face>> Detect(const ImageView& image);

  int input_size() const;  // 128 or 256: the model's square input, pixels

 private:
  struct Impl;
  explicit FaceDetector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace framemill
