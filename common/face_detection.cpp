#include "common/face_detection.h"

#include <cmath>

namespace framemill {
namespace {

bool Within(float v, float limit) { return std::isfinite(v) && v >= -limit && v <= 2 * limit; }

}  // namespace

FaceRecord ToRecord(const Face& f) {
  FaceRecord r;
  r.x = f.x;
  r.y = f.y;
  r.width = f.width;
  r.height = f.height;
  r.score = f.score;
  for (int k = 0; k < kFaceKeypoints; ++k) {
    r.keypoints[2 * k] = f.keypoints[k].x;
    r.keypoints[2 * k + 1] = f.keypoints[k].y;
  }
  return r;
}

Result<Face> FromRecord(const FaceRecord& r, uint32_t width, uint32_t height) {
  const float w = static_cast<float>(width), h = static_cast<float>(height);
  bool ok = Within(r.x, w) && Within(r.y, h) && Within(r.width, w) && Within(r.height, h) &&
            r.width >= 0 && r.height >= 0 && std::isfinite(r.score) && r.score >= 0 &&
            r.score <= 1;
  for (int k = 0; k < kFaceKeypoints && ok; ++k) {
    ok = Within(r.keypoints[2 * k], w) && Within(r.keypoints[2 * k + 1], h);
  }
  if (!ok) {
    return Status(StatusCode::kModelInvalid,
                  "the face detector answered with a face outside its picture or a score "
                  "outside 0..1");
  }
  Face f;
  f.x = r.x;
  f.y = r.y;
  f.width = r.width;
  f.height = r.height;
  f.score = r.score;
  for (int k = 0; k < kFaceKeypoints; ++k) {
    f.keypoints[k] = {r.keypoints[2 * k], r.keypoints[2 * k + 1]};
  }
  return f;
}

Status CheckBatch(const BatchHeader& h) {
  if (h.magic != kBatchMagic || h.width == 0 || h.height == 0 || h.width > kMaxDetectSide ||
      h.height > kMaxDetectSide || uint64_t{h.width} * h.height > kMaxDetectPixels) {
    return Status(StatusCode::kInputInvalid,
                  "a batch of pictures of " + std::to_string(h.width) + "x" +
                      std::to_string(h.height) + ": not a batch, or pictures out of bounds");
  }
  return Status::Ok();
}

}  // namespace framemill
