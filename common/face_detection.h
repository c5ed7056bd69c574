// Face detection across a process boundary. The detector is a file a job names (an ONNX model:
// hostile input) and OpenCV parses it, so it runs in framemill-face-detector (worker/faces/), a
// process confined as a worker is; the supervisor's face pass and `framemill faces` send it
// pictures and read back faces, which are checked here before anything uses them. A detector
// that crashes, hangs or lies costs the job, never the supervisor.
//
// The conversation, over the child's stdin and stdout (little-endian, the machine's own):
//   child -> supervisor, once: Hello (kHelloMagic, the detector's input size, the length of the
//            sandbox's summary) and the summary's bytes. A child that cannot start writes its
//            reason to stderr (its log) and exits 1 without a hello.
//   supervisor -> child:       BatchHeader (kBatchMagic, count, width, height), then `count`
//                              pictures of width x height packed RGB24.
//   child -> supervisor:       for each picture, in order: FacesHeader (kFacesMagic, faces,
//                              microseconds of detection) and `faces` FaceRecords.
//   The supervisor closes stdin: the child exits 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/face.h"
#include "common/status.h"

namespace framemill {

struct FaceDetectorOptions {
  // A face counts when the model's confidence is at least this. 0.75, as the Unity package these
  // ONNX files come from uses, not MediaPipe's 0.5: on this project's test clips real faces
  // scored 0.78 and more, while a clip with no face gave 0.51 (short range) and 0.62 (long
  // range) on blurred leaves.
  float min_score = 0.75f;
  // Detections whose boxes overlap by this much (intersection over union) are one face
  // (MediaPipe's face graphs use 0.3).
  float nms_iou = 0.3f;
  // The most faces returned per picture, best first; 0 = no limit.
  int max_faces = 0;
};

inline constexpr uint32_t kHelloMagic = 0x4f4c4846;  // "FHLO"
inline constexpr uint32_t kBatchMagic = 0x54414246;  // "FBAT"
inline constexpr uint32_t kFacesMagic = 0x43414646;  // "FFAC"
// BlazeFace answers with 896 anchors: no picture has more faces than that.
inline constexpr uint32_t kMaxFacesPerPicture = 896;
inline constexpr uint32_t kMaxSandboxSummary = 4096;
// Detection threads in the child, and pictures in one batch (4 a thread, as the face pass sends).
inline constexpr int kMaxDetectorThreads = 256;
inline constexpr uint32_t kMaxBatchPictures = 4 * kMaxDetectorThreads;
// A picture's side and its pixel count, at most (a 16K frame is 15360 x 8640).
inline constexpr uint32_t kMaxDetectSide = 32768;
inline constexpr uint64_t kMaxDetectPixels = uint64_t{1} << 28;

struct DetectorHello {
  uint32_t magic = kHelloMagic;
  int32_t input_size = 0;  // 128 or 256
  uint32_t sandbox_bytes = 0;
};

struct BatchHeader {
  uint32_t magic = kBatchMagic;
  uint32_t count = 0;
  uint32_t width = 0;
  uint32_t height = 0;
};

struct FacesHeader {
  uint32_t magic = kFacesMagic;
  uint32_t faces = 0;
  uint32_t detect_us = 0;
};

// One face as sent: the box, the score and the keypoints, as Face holds them.
struct FaceRecord {
  float x = 0, y = 0, width = 0, height = 0, score = 0;
  float keypoints[2 * kFaceKeypoints] = {};
};

FaceRecord ToRecord(const Face& f);
// The face a record stands for, checked against the picture it came from: every value finite,
// the score in 0..1, the box and keypoints within a picture's width (height) of it. Errors:
// kModelInvalid naming what is wrong.
Result<Face> FromRecord(const FaceRecord& r, uint32_t width, uint32_t height);

// A batch header's pictures are within the limits above. Errors: kInputInvalid.
Status CheckBatch(const BatchHeader& h);

}  // namespace framemill
