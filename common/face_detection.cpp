#include "common/face_detection.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <unistd.h>

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

Result<bool> ReadExactly(int fd, void* data, size_t n, const char* what) {
  auto* p = static_cast<uint8_t*>(data);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status(StatusCode::kIo, std::string(what) + ": " + std::strerror(errno));
    if (r == 0) {
      if (got == 0) return false;
      return Status(StatusCode::kIo, std::string(what) + ": the stream ended in a record");
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

Status WriteExactly(int fd, const void* data, size_t n, const char* what) {
  const auto* p = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Status(StatusCode::kIo, std::string(what) + ": " + std::strerror(errno));
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

}  // namespace framemill
