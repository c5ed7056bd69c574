// The face detector as the supervisor drives it: framemill-face-detector (worker/faces/), a
// confined child that parses the detector file (a user's ONNX: hostile input to OpenCV) and runs
// it, so that a detector that crashes, hangs or lies costs the job, never the supervisor. The
// conversation and the checks on what comes back are common/face_detection.h's.
//
// Every wait on the child has a deadline (kDetectorStartSeconds for the load, then
// kDetectorBatchSeconds per batch) and ends early when `stop` is set; the child is killed and
// reaped on every way out.
//
// Thread safety: one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/face.h"
#include "common/face_detection.h"
#include "common/status.h"

namespace framemill {

inline constexpr int kDetectorStartSeconds = 120;  // reading and probing the detector
inline constexpr int kDetectorBatchSeconds = 300;  // one batch's pictures and answers

struct DetectorSetup {
  std::string detector;  // the ONNX file: a path, opened here (a job's: /proc/self/fd/N)
  FaceDetectorOptions detection;
  int threads = 1;  // detection threads in the child
  WorkerSandbox sandbox = WorkerSandbox::kAuto;
  std::string log_path;  // the child's stderr ("" = a temporary file, removed with it)
  std::string binary;    // "" = framemill-face-detector beside this program
};

struct DetectedPicture {
  std::vector<Face> faces;  // best first, checked (FromRecord)
  double ms = 0;            // the child's detection time for this picture
};

class DetectorProcess {
 public:
  // Opens the detector (a regular file: a FIFO or device is refused without blocking), starts
  // the child and waits for its hello. Errors: kInputMissing (no such file), kModelInvalid (not
  // a regular file; the child's reason when it cannot load it, or how it died), kInternal (no
  // framemill-face-detector: a build without OpenCV's dnn module), kTimedOut, kCancelled.
  static Result<std::unique_ptr<DetectorProcess>> Start(const DetectorSetup& setup,
                                                        const std::atomic<bool>& stop);
  ~DetectorProcess();  // kills and reaps the child
  DetectorProcess(const DetectorProcess&) = delete;
  DetectorProcess& operator=(const DetectorProcess&) = delete;

  int input_size() const { return input_size_; }       // 128 or 256
  const std::string& sandbox() const { return sandbox_; }  // the child's sandbox summary

  // The faces of `count` pictures of width x height, packed RGB24 one after another at
  // `pixels`. Errors: kModelInvalid (the child died, naming how, with its log's last lines; or it
  // answered out of bounds), kTimedOut, kCancelled, kInputInvalid (pictures out of bounds).
  Result<std::vector<DetectedPicture>> Detect(const uint8_t* pixels, uint32_t count,
                                              uint32_t width, uint32_t height,
                                              const std::atomic<bool>& stop);

 private:
  struct Child;
  explicit DetectorProcess(std::unique_ptr<Child> child);
  // Why the child stopped answering: how it ended and its log's last lines.
  Status Died(const std::string& while_doing);

  std::unique_ptr<Child> child_;
  std::string log_path_;
  int input_size_ = 0;
  std::string sandbox_;
};

// framemill-face-detector's path: `configured`, or the program beside this one.
std::string FaceDetectorBinaryPath(const std::string& configured);

}  // namespace framemill
