// What comes back from the confined face detector (common/face_detection.h) is checked before
// the supervisor uses it: a lying or broken detector process cannot hand the tracker NaNs, faces
// far outside the picture or scores outside 0..1, nor make the supervisor read a batch of
// unbounded pictures.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <unistd.h>

#include "common/face_detection.h"
#include "common/file_util.h"

using framemill::BatchHeader;
using framemill::Face;
using framemill::FaceRecord;
using framemill::FromRecord;
using framemill::StatusCode;

namespace {

FaceRecord GoodRecord() {
  Face f;
  f.x = 10;
  f.y = 20;
  f.width = 30;
  f.height = 40;
  f.score = 0.9f;
  for (int k = 0; k < framemill::kFaceKeypoints; ++k) f.keypoints[k] = {15.0f + k, 30.0f + k};
  return framemill::ToRecord(f);
}

}  // namespace

TEST_CASE("face detection: a face goes over the pipe and comes back the same") {
  const framemill::Result<Face> f = FromRecord(GoodRecord(), 64, 64);
  REQUIRE(f.ok());
  CHECK(f->x == 10);
  CHECK(f->height == 40);
  CHECK(f->score == doctest::Approx(0.9));
  CHECK(f->keypoints[5].x == 20);
  CHECK(f->keypoints[5].y == 35);
}

TEST_CASE("face detection: a face with NaN, far outside its picture, or a bad score is refused") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  FaceRecord r = GoodRecord();
  r.keypoints[3] = nan;
  CHECK(FromRecord(r, 64, 64).status().code() == StatusCode::kModelInvalid);
  r = GoodRecord();
  r.x = 1e9f;
  CHECK(FromRecord(r, 64, 64).status().code() == StatusCode::kModelInvalid);
  r = GoodRecord();
  r.width = -5;
  CHECK_FALSE(FromRecord(r, 64, 64).ok());
  r = GoodRecord();
  r.score = 1.5f;
  CHECK_FALSE(FromRecord(r, 64, 64).ok());
  r = GoodRecord();
  r.y = -30;  // partly above the picture: a face at its edge
  CHECK(FromRecord(r, 64, 64).ok());
}

TEST_CASE("face detection: a batch's pictures are bounded") {
  BatchHeader h;
  h.count = 1;
  h.width = 1920;
  h.height = 1080;
  CHECK(framemill::CheckBatch(h).ok());
  h.width = 0;
  CHECK_FALSE(framemill::CheckBatch(h).ok());
  h.width = 40000;
  CHECK_FALSE(framemill::CheckBatch(h).ok());
  h.width = 30000;
  h.height = 30000;  // each side fits, the pixel count does not
  CHECK_FALSE(framemill::CheckBatch(h).ok());
  h = BatchHeader();
  h.magic = 0;
  h.count = h.width = h.height = 1;
  CHECK_FALSE(framemill::CheckBatch(h).ok());
}

TEST_CASE("face detection: a stream that ends inside a record is an error, at its start the end") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const char three[3] = {1, 2, 3};
  REQUIRE(::write(fds[1], three, 3) == 3);
  ::close(fds[1]);
  char buf[8];
  const framemill::Result<bool> partial = framemill::ReadAllFromFd(fds[0], buf, 8, "test");
  CHECK(partial.status().code() == StatusCode::kIo);
  const framemill::Result<bool> end = framemill::ReadAllFromFd(fds[0], buf, 8, "test");
  REQUIRE(end.ok());
  CHECK_FALSE(*end);
  ::close(fds[0]);
}
